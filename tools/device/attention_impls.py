"""The attention.decode implementations tools/device/attention_proof.py benches, each as a builder: (dims, input sets)
-> one call per set, everything a step would do once (split metadata, plans, workspaces) done outside the calls."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "attention_decode_triton"


def _example_decode():
    spec = importlib.util.spec_from_file_location("attention_example", EXAMPLE / "kernels" / "decode.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.decode


def _sglang_triton(dims, sets):
    """SGLang's decode kernel as its triton backend calls it: split metadata once per step (outside the timing), a
    preallocated fp32 workspace of max_kv_splits = 8 (the server default), PDL on Hopper."""
    from sglang.srt.layers.attention.triton_ops.decode_attention import decode_attention_fwd
    from sglang.srt.layers.attention.triton_ops.metadata import get_num_kv_splits_triton
    import triton

    b, hq, hkv, d = dims["B"], dims["Hq"], dims["Hkv"], dims["D"]
    max_splits = 8
    cores = torch.cuda.get_device_properties(0).multi_processor_count
    pdl = torch.cuda.get_device_capability()[0] >= 9
    calls = []
    for s in sets:
        logits = torch.empty((b, hq, max_splits, d), dtype=torch.float32, device="cuda")
        lse = torch.empty((b, hq, max_splits), dtype=torch.float32, device="cuda")
        splits = torch.empty((b,), dtype=torch.int32, device="cuda")
        seq_lens = s["kv_indptr"].diff().to(torch.int32)
        get_num_kv_splits_triton[(1,)](
            splits, seq_lens, b, 1, hq, hkv, max_splits, cores, MAX_NUM_SEQ=max(256, triton.next_power_of_2(b))
        )

        def call(s=s, logits=logits, lse=lse, splits=splits):
            decode_attention_fwd(
                s["q"],
                s["k_buffer"],
                s["v_buffer"],
                s["out"],
                s["kv_indptr"],
                s["kv_indices"],
                logits,
                lse,
                splits,
                max_splits,
                s["sm_scale"],
                1.0,
                1.0,
                use_pdl=pdl,
            )

        calls.append(call)
    return calls


def _flashinfer(dims, sets):
    """FlashInfer's paged decode (page size 1, NHD), planned once per step outside the timing."""
    import flashinfer

    b, hq, hkv, d = dims["B"], dims["Hq"], dims["Hkv"], dims["D"]
    workspace = torch.empty(128 << 20, dtype=torch.uint8, device="cuda")
    calls = []
    for s in sets:
        wrapper = flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            workspace,
            "NHD",
            use_cuda_graph=True,
            paged_kv_indptr_buffer=s["kv_indptr"],
            paged_kv_indices_buffer=s["kv_indices"].to(torch.int32),
            paged_kv_last_page_len_buffer=torch.ones(b, dtype=torch.int32, device="cuda"),
        )
        wrapper.plan(
            s["kv_indptr"],
            s["kv_indices"].to(torch.int32),
            torch.ones(b, dtype=torch.int32, device="cuda"),
            hq,
            hkv,
            d,
            1,
            q_data_type=s["q"].dtype,
            kv_data_type=s["k_buffer"].dtype,
            sm_scale=s["sm_scale"],
        )
        cache = (s["k_buffer"].view(-1, 1, hkv, d), s["v_buffer"].view(-1, 1, hkv, d))
        calls.append(lambda s=s, w=wrapper, cache=cache: w.run(s["q"], cache, out=s["out"]))
    return calls


def _ours(dims, sets):
    decode = _example_decode()
    return [
        lambda s=s: decode(
            s["q"], s["k_buffer"], s["v_buffer"], s["kv_indptr"], s["kv_indices"], s["out"], s["sm_scale"]
        )
        for s in sets
    ]


IMPLS = {"ours": _ours, "sglang-triton": _sglang_triton, "flashinfer": _flashinfer}
