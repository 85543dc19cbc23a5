"""attention.prefill on SGLang's FlashInfer backend, the production backend a device call can carry (fa3, SGLang's
choice on Hopper, cannot travel: hotfloat.engine.deviations).

`FlashInferAttnBackend.forward_extend(q, k, v, layer, forward_batch, save_kv_cache)` is a method, not a kernel
attribute as on the triton backend, so an AFTER hook on `__init__` wraps the backend's own bound method. On its ragged
path (the one SGLang takes for a plain extend: no piecewise graph, not deterministic, not the paged variant) the new
tokens' K/V are still in `k` and `v` and the prefix is in the pool, which is the slot's layout; the seam builds the
slot's page table once per forward (pool slots of each request's cached prefix, read from `req_to_token`), routes the
attention, then writes the new K/V into the pool as SGLang would. Anything else (cross or encoder attention, a window,
a logit cap, scaled KV, multi-item scoring, the paged or speculative paths, the SWA pool, dLLM) runs SGLang's method
unchanged and is counted stock.
"""

from __future__ import annotations

import torch

from hotfloat.seams import SeamRouter

from ..seam import Seam, callable_check

SLOT = "attention.prefill"
BACKEND = "sglang.srt.layers.attention.flashinfer_backend.FlashInferAttnBackend"
TARGET = f"{BACKEND}.__init__"
EXTEND_PARAMS = ["self", "q", "k", "v", "layer", "forward_batch", "save_kv_cache"]
"""`forward_extend`'s parameters at the pin (compat checks them)."""


def backend_init_hook(router: SeamRouter):
    """An AFTER hook for FlashInferAttnBackend.__init__: routes the new backend's plain extends through `router`."""

    def after(result, backend, *args, **kwargs):
        model_runner = kwargs["model_runner"] if "model_runner" in kwargs else args[0]
        req_to_token = model_runner.req_to_token_pool.req_to_token
        backend.forward_extend = torch.compiler.disable(
            extend_seam(router, backend, backend.forward_extend, req_to_token)
        )
        return result

    return after


def _plain(backend, k, layer, save_kv_cache) -> bool:
    """The call is the slot's math on the ragged path: causal decoder attention over an unscaled, unwindowed cache."""
    meta = backend.forward_metadata
    multi = getattr(meta, "multi_item_params", None)
    return (
        bool(getattr(meta, "use_ragged", False))
        and k is not None
        and bool(save_kv_cache)
        and not layer.is_cross_attention
        and getattr(layer.attn_type, "value", None) == "decoder"
        and (layer.sliding_window_size is None or layer.sliding_window_size < 0)
        and not layer.logit_cap
        and layer.k_scale is None
        and layer.v_scale is None
        and layer.qk_head_dim == layer.v_head_dim == layer.head_dim
        and not backend.use_sliding_window_kv_pool
        and not getattr(backend, "is_dllm_model", False)
        and not (multi is not None and multi.is_enabled())
    )


def page_table(forward_batch, req_to_token) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(qo_indptr int64, kv_indptr int32, kv_indices int64) of a plain extend, in the triton backend's layout: request
    b's new tokens are qo_indptr[b]:qo_indptr[b+1], its cached prefix the pool slots kv_indices[kv_indptr[b]:...]
    (`req_to_token`: the model runner's request-to-pool-slot table)."""
    new, prefix = forward_batch.extend_seq_lens, forward_batch.extend_prefix_lens
    device, batch = new.device, new.shape[0]
    qo_indptr = torch.zeros(batch + 1, dtype=torch.int64, device=device)
    qo_indptr[1:] = torch.cumsum(new, 0)
    kv_indptr = torch.zeros(batch + 1, dtype=torch.int32, device=device)
    kv_indptr[1:] = torch.cumsum(prefix, 0)
    total = int(sum(forward_batch.extend_prefix_lens_cpu))  # host lengths: no device sync for the sizes
    rows = torch.repeat_interleave(forward_batch.req_pool_indices.long(), prefix.long(), output_size=total)
    starts = torch.repeat_interleave(kv_indptr[:-1].long(), prefix.long(), output_size=total)
    cols = torch.arange(total, device=device) - starts
    kv_indices = req_to_token[rows, cols].long()
    return qo_indptr, kv_indptr, kv_indices


def extend_seam(router: SeamRouter, backend, original, req_to_token):
    """The backend's `forward_extend`, with plain ragged extends inside the armed domain sent to the bundle."""
    held: list = [None, None]  # the forward in flight and its page table, built by its first layer

    def forward_extend(q, k, v, layer, forward_batch, save_kv_cache=True):
        if not _plain(backend, k, layer, save_kv_cache):
            router.count_stock(SLOT)
            return original(q, k, v, layer, forward_batch, save_kv_cache)
        if held[0] is not forward_batch:
            held[:] = forward_batch, page_table(forward_batch, req_to_token)
        qo_indptr, kv_indptr, kv_indices = held[1]
        hq, hkv, d = layer.tp_q_head_num, layer.tp_k_head_num, layer.head_dim
        q3, k3, v3 = (x.contiguous().view(-1, h, d) for x, h in ((q, hq), (k, hkv), (v, hkv)))
        pool = backend.token_to_kv_pool

        def stock(*_):
            return original(q, k, v, layer, forward_batch, False).view(-1, hq, d)

        out = router.call(
            SLOT,
            stock,
            q3,
            k3,
            v3,
            pool.get_key_buffer(layer.layer_id),
            pool.get_value_buffer(layer.layer_id),
            qo_indptr,
            kv_indptr,
            kv_indices,
            float(layer.scaling),
        )
        pool.set_kv_buffer(layer, forward_batch.out_cache_loc, k, v, layer.k_scale, layer.v_scale)
        return out.reshape(-1, hq * d)

    return forward_extend


CHECKS = (
    callable_check("FlashInferAttnBackend.__init__", TARGET, ["self", "model_runner"]),
    callable_check("FlashInferAttnBackend.forward_extend", f"{BACKEND}.forward_extend", EXTEND_PARAMS),
    callable_check(
        "MHATokenToKVPool.set_kv_buffer",
        "sglang.srt.mem_cache.memory_pool.MHATokenToKVPool.set_kv_buffer",
        ["self", "layer", "loc", "cache_k", "cache_v", "k_scale", "v_scale"],
    ),  # fmt: skip
)

SEAMS = (Seam((SLOT,), (TARGET,), backend_init_hook, after=True, checks=CHECKS, backend="flashinfer"),)
