"""SGLang's prefill-attention chokepoint: the triton backend's `extend_attention_fwd` call, routed as attention.prefill.

`TritonAttnBackend.forward_extend` writes the new tokens' K/V into the pool, picks the (window or full) prefix page
table and ends in one call, `self.extend_attention_fwd(q, k, v, o, k_buffer, v_buffer, qo_indptr, kv_indptr,
kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale, ...)`, an attribute its
`__init__` sets. An AFTER hook on `__init__` wraps that attribute on every backend, as the decode seam does, so the
cache write and the metadata stay SGLang's and only the attention itself is routed.

Only the plain call is the slot: causal, no custom mask (speculative verify trees), sliding window, logit cap, sinks
or xai temperature, unscaled KV and one head dim for q, k and v. Anything else, and any call the armed op's domain does
not cover, runs SGLang's kernel and is counted stock. (The deterministic mode's unified kernel is another attribute,
`extend_attention_fwd_unified`, and is never routed.)
"""

from __future__ import annotations

import torch

from hotfloat.seams import SeamRouter

from .triton_backend import TARGET, seam  # noqa: F401 (TARGET: the hook target, named here for tests and docs)

SLOT = "attention.prefill"
EXTEND_PARAMS = (
    "q_extend k_extend v_extend o_extend k_buffer v_buffer qo_indptr kv_indptr kv_indices custom_mask is_causal "
    "mask_indptr max_len_extend k_scale v_scale sm_scale logit_cap skip_prefix_custom_mask sliding_window_size sinks "
    "window_kv_offsets xai_temperature_len"
).split()
"""`extend_attention_fwd`'s parameters at the pin, in order (compat checks them)."""


def backend_init_hook(router: SeamRouter):
    """An AFTER hook for TritonAttnBackend.__init__: routes the new backend's prefill attention through `router`."""

    def after(result, backend, *args, **kwargs):
        backend.extend_attention_fwd = torch.compiler.disable(extend_seam(router, backend.extend_attention_fwd))
        return result

    return after


def _plain(q, k, v, custom_mask, is_causal, k_scale, v_scale, sm_scale, extra) -> bool:
    """The call computes the slot's math: causal softmax attention over an unscaled cache, one head dim throughout."""
    return (
        custom_mask is None
        and bool(is_causal)
        and k_scale == 1
        and v_scale == 1
        and sm_scale is not None
        and not extra["logit_cap"]
        and (extra["sliding_window_size"] is None or extra["sliding_window_size"] <= 0)
        and extra["sinks"] is None
        and extra["window_kv_offsets"] is None
        and (extra["xai_temperature_len"] is None or extra["xai_temperature_len"] <= 0)
        and q.dim() == k.dim() == v.dim() == 3
        and q.shape[-1] == k.shape[-1] == v.shape[-1]
    )


def extend_seam(router: SeamRouter, original):
    """SGLang's `extend_attention_fwd`, with the plain calls inside the armed domain sent to the bundle."""

    def extend_attention_fwd(
        q_extend,
        k_extend,
        v_extend,
        o_extend,
        k_buffer,
        v_buffer,
        qo_indptr,
        kv_indptr,
        kv_indices,
        custom_mask,
        is_causal,
        mask_indptr,
        max_len_extend,
        k_scale,
        v_scale,
        sm_scale=None,
        logit_cap=0.0,
        skip_prefix_custom_mask=True,
        sliding_window_size=-1,
        sinks=None,
        window_kv_offsets=None,
        xai_temperature_len=-1,
    ):
        extra = {
            "logit_cap": logit_cap,
            "skip_prefix_custom_mask": skip_prefix_custom_mask,
            "sliding_window_size": sliding_window_size,
            "sinks": sinks,
            "window_kv_offsets": window_kv_offsets,
            "xai_temperature_len": xai_temperature_len,
        }
        head = (q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr, kv_indices)
        tail = (custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale, sm_scale)

        def stock(*_):
            original(*head, *tail, **extra)
            return o_extend

        if not _plain(q_extend, k_extend, v_extend, custom_mask, is_causal, k_scale, v_scale, sm_scale, extra):
            router.count_stock(SLOT)
            stock()
            return None
        batch = qo_indptr.shape[0] - 1
        # as in decode, the first B+1 entries of kv_indptr are the live ones
        out = router.call(
            SLOT,
            stock,
            q_extend,
            k_extend,
            v_extend,
            k_buffer,
            v_buffer,
            qo_indptr,
            kv_indptr[: batch + 1],
            kv_indices,
            float(sm_scale),
        )
        if out is not o_extend:
            o_extend.copy_(out)
        return None

    return extend_attention_fwd


SEAMS = (seam(SLOT, backend_init_hook, "extend_attention.extend_attention_fwd", EXTEND_PARAMS),)
