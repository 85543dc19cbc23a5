"""Prefill attention's stock kernels, each called as the SGLang backend that runs it calls it at extend.

SGLang's triton backend hands `extend_attention_fwd` exactly the slot's arguments plus the longest new-token count,
which it reads from host-side lengths: here it is read once per input set, outside the timing. SGLang's flashinfer
backend runs two kernels and merges them: a ragged causal prefill over the new tokens' own K/V and, when some request
has a cached prefix, a paged non-causal prefill over the prefix pages, merged by log-sum-exp (`merge_state`). Both
wrappers are planned per set outside the timing (with the set's int32 copy of the page table, as SGLang builds its
FlashInfer page tables in int32) and run in CUDA-graph mode with fixed buffers, so a captured call reads what the
latest plan wrote. Backends as SGLang picks them on Hopper: `auto` for the ragged wrapper, fa2 for the paged one.
"""

from __future__ import annotations

import importlib
import importlib.util

import torch

from .stock_records import Prepared, Stock

WORKSPACE_BYTES = 384 << 20
"""FlashInfer's float workspace, one per device shared by every wrapper, as SGLang shares one (its default size, SGLANG_FLASHINFER_WORKSPACE_SIZE at the pin: 256 MiB overflowed at 32 x 128 tokens after 1,024): the calls run in turn."""


def _module(name: str):
    """The module, or the reason it cannot load here (absent, or no libcuda / an ABI mismatch on this host)."""
    if importlib.util.find_spec(name.split(".")[0]) is None:
        return "not installed"
    try:
        return importlib.import_module(name)
    except Exception as e:  # a library that cannot load on this host is skipped with the reason
        return f"import failed: {type(e).__name__}: {e}"[:300]


def _longest(indptr: torch.Tensor) -> int:
    return int(indptr.diff().max()) if indptr.numel() > 1 else 0


def sglang_triton_extend() -> Stock | str:
    """SGLang's triton `extend_attention_fwd` as TritonAttnBackend.forward_extend calls it: causal, no custom mask,
    unscaled KV, the set's longest new-token count passed as `max_len_extend`."""
    module = _module("sglang.srt.layers.attention.triton_ops.extend_attention")
    if isinstance(module, str):
        return module
    extend = module.extend_attention_fwd

    def prepare(t):
        longest = [_longest(t["qo_indptr"])]

        def refresh():
            longest[0] = _longest(t["qo_indptr"])

        return Prepared({"stock_out": torch.full_like(t["q"], float("nan")), "stock_state": longest}, refresh)

    def call(t):
        extend(
            t["q"],
            t["k"],
            t["v"],
            t["stock_out"],
            t["k_buffer"],
            t["v_buffer"],
            t["qo_indptr"],
            t["kv_indptr"],
            t["kv_indices"],
            None,
            True,
            None,
            t["stock_state"][0],
            1.0,
            1.0,
            t["sm_scale"],
        )
        return t["stock_out"]

    return Stock("sglang-triton", call, probe=True, prepare=prepare)


def flashinfer_prefill() -> Stock | str:
    """FlashInfer's ragged prefill over the new tokens, plus its paged prefill over the prefix merged in when a
    request has one, as SGLang's flashinfer backend runs an extend (NHD, page size 1)."""
    fi = _module("flashinfer")
    if isinstance(fi, str):
        return fi
    try:
        ragged_cls, paged_cls = fi.BatchPrefillWithRaggedKVCacheWrapper, fi.BatchPrefillWithPagedKVCacheWrapper
        merge = fi.merge_state
    except AttributeError as e:
        return f"import failed: AttributeError: {e}"[:300]
    workspaces: dict[torch.device, torch.Tensor] = {}

    def prepare(t):
        q, k = t["q"], t["k"]
        hq, hkv, d = q.shape[1], k.shape[1], q.shape[2]
        b, dev = t["qo_indptr"].shape[0] - 1, q.device
        if dev not in workspaces:
            workspaces[dev] = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device=dev)
        buf = lambda n: torch.empty((n,), dtype=torch.int32, device=dev)  # noqa: E731
        ragged = ragged_cls(
            workspaces[dev], "NHD", use_cuda_graph=True, qo_indptr_buf=buf(b + 1), kv_indptr_buf=buf(b + 1)
        )
        paged = paged_cls(
            workspaces[dev],
            "NHD",
            use_cuda_graph=True,
            qo_indptr_buf=buf(b + 1),
            paged_kv_indptr_buf=buf(b + 1),
            paged_kv_indices_buf=buf(t["kv_indices"].shape[0]),
            paged_kv_last_page_len_buf=buf(b),
            backend="fa2",
        )
        last_page_len = torch.ones((b,), dtype=torch.int32, device=dev)
        cached = [False]
        kinds = {"q_data_type": q.dtype, "kv_data_type": k.dtype, "sm_scale": t["sm_scale"]}

        def refresh():
            qo, kv = t["qo_indptr"].to(torch.int32), t["kv_indptr"]  # FlashInfer's plan takes int32 indptrs
            ragged.plan(qo, qo, hq, hkv, d, causal=True, **kinds)
            cached[0] = int(kv[-1]) > 0
            if cached[0]:
                pages = t["kv_indices"].to(torch.int32)
                paged.plan(qo, kv, pages, last_page_len, hq, hkv, d, 1, causal=False, **kinds)

        refresh()
        pools = (t["k_buffer"].view(-1, 1, hkv, d), t["v_buffer"].view(-1, 1, hkv, d))
        return Prepared({"stock_state": (ragged, paged, pools, cached)}, refresh)

    def call(t):
        ragged, paged, pools, cached = t["stock_state"]
        if not cached[0]:  # no request has a prefix: SGLang runs the ragged kernel alone
            return ragged.run(t["q"], t["k"], t["v"])
        o_new, lse_new = ragged.run(t["q"], t["k"], t["v"], return_lse=True)
        o_cached, lse_cached = paged.run(t["q"], pools, return_lse=True)
        return merge(o_new, lse_new, o_cached, lse_cached)[0]

    return Stock("flashinfer", call, probe=True, prepare=prepare)


def sglang_fa3_extend() -> Stock | str:
    """SGLang's fa3 backend at an extend, its default on Hopper: the new tokens' K/V written into the pool (here a copy
    of it, outside the timing), then sgl_kernel's FA3 paged kernel over each request's prefix and new tokens (page
    size 1, causal aligned to the end of each sequence). The device payload trims sgl_kernel's FA3 library (about
    1 GB), so there this row is reported as not built, with the import's reason."""
    fa3 = _module("sgl_kernel.flash_attn")
    if isinstance(fa3, str):
        return fa3

    def prepare(t):
        p, hkv, d = t["k_buffer"].shape
        b, dev = t["qo_indptr"].shape[0] - 1, t["q"].device
        pools = [torch.empty((p + t["k"].shape[0], hkv, d), dtype=t["k"].dtype, device=dev) for _ in range(2)]
        table = torch.zeros((b, p + t["k"].shape[0]), dtype=torch.int32, device=dev)
        seqlens, cu_q = (torch.zeros((n,), dtype=torch.int32, device=dev) for n in (b, b + 1))
        state = {"pools": pools, "table": table, "seqlens": seqlens, "cu_q": cu_q}  # refilled in place: graph-safe

        def refresh():
            for pool, cached, new in zip(pools, (t["k_buffer"], t["v_buffer"]), (t["k"], t["v"]), strict=True):
                pool[:p].copy_(cached)
                pool[p:].copy_(new)
            qo, kv = t["qo_indptr"].tolist(), t["kv_indptr"].tolist()
            table.zero_()
            for i in range(b):
                old, new = kv[i + 1] - kv[i], qo[i + 1] - qo[i]
                table[i, :old] = t["kv_indices"][kv[i] : kv[i + 1]]
                table[i, old : old + new] = torch.arange(p + qo[i], p + qo[i + 1], device=dev)
            seqlens.copy_(torch.tensor([kv[i + 1] - kv[i] + qo[i + 1] - qo[i] for i in range(b)]))
            cu_q.copy_(t["qo_indptr"])
            state["max_q"] = max(qo[i + 1] - qo[i] for i in range(b))

        refresh()
        return Prepared({"stock_state": state}, refresh)

    def call(t):
        s = t["stock_state"]
        k_pool, v_pool = (pool.view(-1, 1, *pool.shape[1:]) for pool in s["pools"])
        return fa3.flash_attn_with_kvcache(
            t["q"],
            k_pool,
            v_pool,
            page_table=s["table"],
            cache_seqlens=s["seqlens"],
            cu_seqlens_q=s["cu_q"],
            max_seqlen_q=s["max_q"],
            softmax_scale=t["sm_scale"],
            causal=True,
        )

    return Stock("sglang-fa3", call, probe=True, prepare=prepare)
