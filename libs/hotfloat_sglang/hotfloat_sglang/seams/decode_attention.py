"""SGLang's decode-attention chokepoint: the triton backend's `decode_attention_fwd` call, routed as attention.decode.

`TritonAttnBackend.forward_decode` writes the new token's K/V into the pool, picks the (window or full) page table
and ends in one call, `self.decode_attention_fwd(q, k_buffer, v_buffer, o, kv_indptr, kv_indices, attn_logits,
attn_lse, num_kv_splits, max_kv_splits, sm_scale, k_scale, v_scale, ...)`, an attribute its `__init__` sets. An
AFTER hook on `__init__` wraps that attribute on every backend, so the cache write, the page-table choice and the
split metadata stay SGLang's and only the attention itself is routed; CUDA-graph capture records whichever kernel ran.

Only the plain call is the slot: no logit cap, attention sinks, xai temperature, MLA, KV-cache scales, and a V head
dim equal to Q's. Anything else, and any call the armed op's domain does not cover, runs SGLang's kernel and is
counted stock.
"""

from __future__ import annotations

import torch

from hotfloat.seams import SeamRouter

from .triton_backend import TARGET, seam  # noqa: F401 (TARGET: the hook target, named here for tests and docs)

SLOT = "attention.decode"
DECODE_PARAMS = [
    "q",
    "k_buffer",
    "v_buffer",
    "o",
    "kv_indptr",
    "kv_indices",
    "attn_logits",
    "attn_lse",
    "num_kv_splits",
    "max_kv_splits",
    "sm_scale",
    "k_scale",
    "v_scale",
    "logit_cap",
    "sinks",
    "xai_temperature_len",
    "has_mla",
    "use_pdl",
]
"""`decode_attention_fwd`'s parameters at the pin, in order (compat checks them)."""


def backend_init_hook(router: SeamRouter):
    """An AFTER hook for TritonAttnBackend.__init__: routes the new backend's decode attention through `router`."""

    def after(result, backend, *args, **kwargs):
        backend.decode_attention_fwd = torch.compiler.disable(decode_seam(router, backend.decode_attention_fwd))
        return result

    return after


def _plain(q, v_buffer, k_scale, v_scale, logit_cap, sinks, xai_temperature_len, has_mla) -> bool:
    """The call computes the slot's math: plain softmax attention over an unscaled cache, V head dim = Q head dim."""
    return (
        not logit_cap
        and sinks is None
        and (xai_temperature_len is None or xai_temperature_len <= 0)
        and not has_mla
        and k_scale == 1
        and v_scale == 1
        and q.dim() == 3
        and q.shape[-1] == v_buffer.shape[-1]
    )


def decode_seam(router: SeamRouter, original):
    """SGLang's `decode_attention_fwd`, with the plain calls inside the armed domain sent to the bundle."""

    def decode_attention_fwd(
        q,
        k_buffer,
        v_buffer,
        o,
        kv_indptr,
        kv_indices,
        attn_logits,
        attn_lse,
        num_kv_splits,
        max_kv_splits,
        sm_scale,
        k_scale,
        v_scale,
        logit_cap=0.0,
        sinks=None,
        xai_temperature_len=-1,
        has_mla=False,
        use_pdl=False,
    ):
        def stock(*_):
            original(
                q,
                k_buffer,
                v_buffer,
                o,
                kv_indptr,
                kv_indices,
                attn_logits,
                attn_lse,
                num_kv_splits,
                max_kv_splits,
                sm_scale,
                k_scale,
                v_scale,
                logit_cap=logit_cap,
                sinks=sinks,
                xai_temperature_len=xai_temperature_len,
                has_mla=has_mla,
                use_pdl=use_pdl,
            )
            return o

        if not _plain(q, v_buffer, k_scale, v_scale, logit_cap, sinks, xai_temperature_len, has_mla):
            router.count_stock(SLOT)
            stock()
            return None
        # the graph-captured backend hands a kv_indptr sized for its largest batch; the first B+1 entries are live
        out = router.call(SLOT, stock, q, k_buffer, v_buffer, kv_indptr[: q.shape[0] + 1], kv_indices, float(sm_scale))
        if out is not o:
            o.copy_(out)
        return None

    return decode_attention_fwd


SEAMS = (seam(SLOT, backend_init_hook, "decode_attention.decode_attention_fwd", DECODE_PARAMS),)
