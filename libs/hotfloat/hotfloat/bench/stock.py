"""The stock kernels the engine runs today for each slot, timed beside the candidate in the same run.

torch-eager is SGLang's `forward_native` path. For the token-row slots the libraries SGLang's CUDA path calls
(sgl-kernel, FlashInfer) share one calling convention: `silu_and_mul(x)` and `rmsnorm(x, weight, eps)` return their
output, `fused_add_rmsnorm(x, residual, weight, eps)` overwrites x with the normalised sum and residual with the sum.
Decode attention has no shared convention: SGLang's triton kernel and FlashInfer's paged decode each get an adapter
that calls them as SGLang's triton and flashinfer backends do, with the per-step metadata (split counts, plan, int32
page table) made outside the timed region. A library joins the run when it imports here; FlashInfer builds its
kernels on the first call (JIT, nvcc), so that first call is the harness's probe. Libraries are called with their
own defaults, as SGLang calls them (PDL on Hopper). A fused collective's stock path is SGLang's unfused one: the
all-reduce, then the stock kernels of the slot it fuses (stock_collective)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable

import torch
import torch.nn.functional as F

from .stock_collective import FUSES, after_all_reduce
from .stock_moe import REDUCES, sglang_fused_moe, then_all_reduce
from .stock_prefill import flashinfer_prefill, sglang_fa3_extend, sglang_triton_extend
from .stock_records import Prepared, Stock

LIBRARIES = ("sgl_kernel", "flashinfer", "sglang")
"""Stock libraries a bench adds when they load: the convention's modules for the token-row slots, the adapters'
modules for decode attention."""
ADAPTED_ONLY = ("sglang",)
"""Modules whose kernels are reached only through an adapter (SGLang's own), never under the shared convention."""
FUNCTIONS = {
    "activation.silu_and_mul": ("silu_and_mul", "activation"),
    "norm.rmsnorm": ("rmsnorm", "norm"),
    "norm.fused_add_rmsnorm": ("fused_add_rmsnorm", "norm"),
}
"""Slot -> (function name, submodule that holds it when the package's top level does not export it)."""


def _silu_eager(t):
    x = t["x"]
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def _rmsnorm_eager(t):
    x = t["x"]
    x32 = x.float()
    x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + t["eps"])
    return (x32 * t["weight"].float()).to(x.dtype)


def _rmsnorm_torch(t):
    x = t["x"]
    return F.rms_norm(x, (x.shape[-1],), t["weight"], t["eps"])


def _fused_eager(t):
    """SGLang's forward_native with a residual: sum in fp32, round the new residual, normalise the fp32 sum."""
    x = t["x"]
    s = x.float() + t["residual"].float()
    out = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + t["eps"])
    return (out * t["weight"].float()).to(x.dtype), s.to(x.dtype)


def _fused_torch(t):
    """The shortest unfused torch: add in the op dtype, then torch's own fused rms_norm."""
    x = t["x"]
    residual = x + t["residual"]
    return F.rms_norm(residual, (x.shape[-1],), t["weight"], t["eps"]), residual


BUILTIN: dict[str, tuple[Stock, ...]] = {
    "activation.silu_and_mul": (Stock("torch-eager", _silu_eager),),
    "norm.rmsnorm": (Stock("torch-eager", _rmsnorm_eager), Stock("torch.rms_norm", _rmsnorm_torch)),
    "norm.fused_add_rmsnorm": (Stock("torch-eager", _fused_eager), Stock("torch add+rms_norm", _fused_torch)),
}


def library(module: str, slot: str) -> Stock | str:
    """The module's kernel for the slot as a Stock, or the reason it cannot run here."""
    if importlib.util.find_spec(module) is None:
        return "not installed"
    name, sub = FUNCTIONS[slot]
    try:
        lib = importlib.import_module(module)
        fn = getattr(lib, name, None) or getattr(importlib.import_module(f"{module}.{sub}"), name)
    except Exception as e:  # a library that cannot load on this host (no libcuda, ABI mismatch) is skipped
        return f"import failed: {type(e).__name__}: {e}"[:300]
    if slot == "activation.silu_and_mul":
        return Stock(module, lambda t: fn(t["x"]), probe=True)
    if slot == "norm.rmsnorm":
        return Stock(module, lambda t: fn(t["x"], t["weight"], t["eps"]), probe=True)

    def fused(t):
        fn(t["x"], t["residual"], t["weight"], t["eps"])
        return t["x"], t["residual"]

    return Stock(module, fused, overwrites=("x", "residual"), probe=True)


def sglang_triton_decode() -> Stock | str:
    """SGLang's triton `decode_attention_fwd`, called as its TritonAttnBackend.forward_decode calls it: fp32 split
    workspaces of `triton_attention_num_kv_splits` (the server default, read from the pin) shared by every set as one
    engine step shares them across layers, and the per-request split counts from SGLang's own metadata kernel,
    computed once per set outside the timing (SGLang computes them once per step)."""
    if importlib.util.find_spec("sglang") is None:
        return "not installed"
    try:
        decode = importlib.import_module("sglang.srt.layers.attention.triton_ops.decode_attention").decode_attention_fwd
        splits_kernel = importlib.import_module(
            "sglang.srt.layers.attention.triton_ops.metadata"
        ).get_num_kv_splits_triton
        max_splits = importlib.import_module("sglang.srt.server_args").ServerArgs.triton_attention_num_kv_splits
    except Exception as e:  # a payload that cannot load here (no libcuda, ABI mismatch) is skipped
        return f"import failed: {type(e).__name__}: {e}"[:300]
    workspaces: dict[tuple, tuple[torch.Tensor, torch.Tensor]] = {}

    def prepare(t):
        q, v = t["q"], t["v_buffer"]
        b, hq, _ = q.shape
        key = (q.device, b, hq, v.shape[-1])
        if key not in workspaces:
            workspaces[key] = (
                torch.empty((b, hq, max_splits, v.shape[-1]), dtype=torch.float32, device=q.device),
                torch.empty((b, hq, max_splits), dtype=torch.float32, device=q.device),
            )
        splits = torch.empty((b,), dtype=torch.int32, device=q.device)
        cores = torch.cuda.get_device_properties(q.device).multi_processor_count if q.is_cuda else 0

        def refresh():
            if cores <= 0:  # SGLang's get_num_kv_splits without a core count: every request at the maximum
                splits.fill_(max_splits)
                return
            seq_lens = t["kv_indptr"].diff().to(torch.int32)
            splits_kernel[(1,)](
                splits,
                seq_lens,
                b,
                1,
                hq,
                t["k_buffer"].shape[1],
                max_splits,
                cores,
                MAX_NUM_SEQ=max(256, 1 << (b - 1).bit_length()),
            )

        refresh()
        pdl = q.is_cuda and torch.cuda.get_device_capability(q.device)[0] >= 9
        return Prepared(
            {"stock_out": torch.full_like(q, float("nan")), "stock_state": (*workspaces[key], splits, pdl)}, refresh
        )

    def call(t):
        logits, lse, splits, pdl = t["stock_state"]
        decode(
            t["q"],
            t["k_buffer"],
            t["v_buffer"],
            t["stock_out"],
            t["kv_indptr"],
            t["kv_indices"],
            logits,
            lse,
            splits,
            max_splits,
            t["sm_scale"],
            1.0,
            1.0,
            use_pdl=pdl,
        )
        return t["stock_out"]

    return Stock("sglang-triton", call, probe=True, prepare=prepare)


FLASHINFER_WORKSPACE_BYTES = 256 << 20
"""FlashInfer's float workspace (split-KV partial results); one per device, shared by every set's wrapper, as
SGLang shares one across its wrappers: the calls run one after another."""


def flashinfer_decode() -> Stock | str:
    """FlashInfer's BatchDecodeWithPagedKVCacheWrapper as SGLang's flashinfer backend drives it at decode: NHD, page
    size 1, backend fa2, tensor cores from a GQA group of 4 up (SGLang's should_use_tensor_core for 16-bit KV), CUDA
    graph mode with fixed buffers. One wrapper per input set, planned outside the timing with the set's int32 copy of
    the page table (SGLang builds its page tables in int32 for FlashInfer; the slot's are int64): that conversion and
    the plan are per-step metadata, not part of the timed call. The K/V pools are passed as views (no copy)."""
    if importlib.util.find_spec("flashinfer") is None:
        return "not installed"
    try:
        wrapper_cls = importlib.import_module("flashinfer").BatchDecodeWithPagedKVCacheWrapper
    except Exception as e:  # a library that cannot load on this host (no libcuda, ABI mismatch) is skipped
        return f"import failed: {type(e).__name__}: {e}"[:300]
    workspaces: dict[torch.device, torch.Tensor] = {}

    def prepare(t):
        q, k = t["q"], t["k_buffer"]
        b, hq, d = q.shape
        hkv = k.shape[1]
        if q.device not in workspaces:
            workspaces[q.device] = torch.zeros(FLASHINFER_WORKSPACE_BYTES, dtype=torch.uint8, device=q.device)
        last_page_len = torch.ones((b,), dtype=torch.int32, device=q.device)
        wrapper = wrapper_cls(
            workspaces[q.device],
            "NHD",
            use_cuda_graph=True,
            use_tensor_cores=hq // hkv >= 4,
            backend="fa2",
            paged_kv_indptr_buffer=torch.empty((b + 1,), dtype=torch.int32, device=q.device),
            paged_kv_indices_buffer=torch.empty(t["kv_indices"].shape, dtype=torch.int32, device=q.device),
            paged_kv_last_page_len_buffer=torch.empty((b,), dtype=torch.int32, device=q.device),
        )

        def refresh():
            wrapper.plan(
                t["kv_indptr"],
                t["kv_indices"].to(torch.int32),
                last_page_len,
                hq,
                hkv,
                d,
                1,
                q_data_type=q.dtype,
                kv_data_type=k.dtype,
                sm_scale=t["sm_scale"],
            )

        refresh()
        cache = (k.view(-1, 1, hkv, d), t["v_buffer"].view(-1, 1, hkv, d))
        return Prepared({"stock_out": torch.full_like(q, float("nan")), "stock_state": (wrapper, cache)}, refresh)

    def call(t):
        wrapper, cache = t["stock_state"]
        return wrapper.run(t["q"], cache, out=t["stock_out"])

    return Stock("flashinfer", call, probe=True, prepare=prepare)


ADAPTERS: dict[str, dict[str, Callable[[], Stock | str]]] = {
    "attention.decode": {"sglang": sglang_triton_decode, "flashinfer": flashinfer_decode},
    "attention.prefill": {
        "sglang": sglang_triton_extend,
        "flashinfer": flashinfer_prefill,
        "sgl_kernel": sglang_fa3_extend,
    },
    "moe.fused_experts": {"sglang": sglang_fused_moe},
}
"""Slot -> module -> adapter, for slots whose libraries share no calling convention."""


def stock_kernels(slot: str, libraries: tuple[str, ...]) -> tuple[list[Stock], dict[str, str]]:
    """Every stock kernel that can run the slot here, torch first, and why each named library cannot (a library with
    no kernel for the slot, under the convention or an adapter, is not reported)."""
    if slot in FUSES:
        found, skipped = stock_kernels(FUSES[slot], libraries)
        return [after_all_reduce(s) for s in found], skipped
    if slot in REDUCES:
        found, skipped = stock_kernels(REDUCES[slot], libraries)
        return [then_all_reduce(s) for s in found], skipped
    found, skipped = list(BUILTIN.get(slot, ())), {}
    for module in libraries:
        if slot in ADAPTERS:
            if module not in ADAPTERS[slot]:
                continue
            s = ADAPTERS[slot][module]()
        elif slot in FUNCTIONS and module not in ADAPTED_ONLY:
            s = library(module, slot)
        else:
            continue
        if isinstance(s, Stock):
            found.append(s)
        else:
            skipped[module] = s
    return found, skipped
