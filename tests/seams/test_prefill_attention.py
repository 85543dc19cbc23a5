"""The SGLang prefill-attention seam: SGLang's `extend_attention_fwd` call routed to an armed attention.prefill op
inside its domain (a plain-torch bundle, fixtures/prefill_torch), to SGLang's kernel otherwise.

SGLang itself is not installed in the test venv; `sglang_extend` below stands in for its kernel with the same
signature and writes into `o_extend` as it does. The hook target and parameters are checked at the pin by `hotfloat
compat` (the seam's own compat rows), and this test keeps the seam's parameter list equal to that row.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
import torch

from hotfloat.seams import arm
from hotfloat.slots import get_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import decode_attention, prefill_attention as seam  # noqa: E402

SLOT = get_slot("attention.prefill")
DIMS = {"B": 3, "T": 30, "L": 20, "P": 60, "N": 60, "Hq": 8, "Hkv": 2, "D": 64}
PLAIN = {
    "logit_cap": 0.0,
    "skip_prefix_custom_mask": True,
    "sliding_window_size": -1,
    "sinks": None,
    "window_kv_offsets": None,
    "xai_temperature_len": -1,
}


class Backend:
    """What the hook touches on SGLang's TritonAttnBackend: the extend kernel attribute its __init__ sets."""

    def __init__(self):
        self.calls = []
        self.extend_attention_fwd = self.sglang_extend

    def sglang_extend(self, q_extend, k_extend, v_extend, o_extend, k_buffer, v_buffer, qo_indptr, kv_indptr,
                      kv_indices, custom_mask, is_causal, mask_indptr, max_len_extend, k_scale, v_scale,
                      sm_scale=None, **extra):  # fmt: skip
        self.calls.append({"custom_mask": custom_mask, "is_causal": is_causal, "k_scale": k_scale, **extra})
        t = {"q": q_extend, "k": k_extend, "v": v_extend, "k_buffer": k_buffer, "v_buffer": v_buffer}
        t |= {"qo_indptr": qo_indptr, "kv_indptr": kv_indptr[: qo_indptr.shape[0]], "kv_indices": kv_indices}
        o_extend.copy_(SLOT.reference(t | {"sm_scale": sm_scale})["out"])


@pytest.fixture(scope="module")
def armed():
    return arm(Path(__file__).parent / "fixtures" / "prefill_torch")


def _call(backend, dtype=torch.bfloat16, indptr_pad=0, custom_mask=None, is_causal=True, k_scale=1.0, qo=None, **extra):
    gen = torch.Generator().manual_seed(7)
    t = SLOT.make_inputs(DIMS, dtype, gen) | SLOT.make_scalars(DIMS, gen)
    t["qo_indptr"] = t["qo_indptr"].to(qo or t["qo_indptr"].dtype)
    indptr = torch.cat([t["kv_indptr"], t["kv_indptr"][-1:].repeat(indptr_pad)])
    o = torch.full_like(t["q"], float("nan"))
    backend.extend_attention_fwd(
        t["q"],
        t["k"],
        t["v"],
        o,
        t["k_buffer"],
        t["v_buffer"],
        t["qo_indptr"],
        indptr,
        t["kv_indices"],
        custom_mask,
        is_causal,
        None,
        int(t["qo_indptr"].diff().max()),
        k_scale,
        1.0,
        t["sm_scale"],
        **(PLAIN | extra),
    )
    return o, SLOT.reference(t)["out"]


def _hooked(router) -> Backend:
    backend = Backend()
    assert seam.backend_init_hook(router)(None, backend, "model_runner") is None
    return backend


def _close(o, ref, dtype="bf16"):
    tol = SLOT.tolerances[dtype]
    return bool(((o.float() - ref).abs() <= tol.atol + tol.rtol * ref.abs()).all())


@pytest.mark.parametrize("pad", [0, 4])
def test_plain_calls_run_the_armed_kernel_into_sglangs_output(armed, pad):
    armed.reset_counts()
    backend = _hooked(armed)
    o, ref = _call(backend, indptr_pad=pad)  # pad: a kv_indptr buffer longer than the batch
    assert backend.calls == [] and _close(o, ref)
    assert armed.counts()[seam.SLOT].routed == 1 and armed.counts()[seam.SLOT].stock == 0


@pytest.mark.parametrize(
    "extra",
    [
        {"custom_mask": torch.ones(10, dtype=torch.bool)},
        {"is_causal": False},
        {"k_scale": 0.5},
        {"logit_cap": 30.0},
        {"sliding_window_size": 128},
        {"sinks": torch.zeros(8)},
        {"xai_temperature_len": 4096},
    ],
)
def test_variants_the_slot_does_not_compute_go_to_sglang_unchanged(armed, extra):
    armed.reset_counts()
    backend = _hooked(armed)
    o, _ = _call(backend, **extra)
    [call] = backend.calls
    for key, value in extra.items():
        assert call[key] is value or call[key] == value
    assert armed.counts()[seam.SLOT].stock == 1 and armed.counts()[seam.SLOT].routed == 0


def test_outside_the_declared_dtypes_and_null_armed_calls_are_stock(armed):
    armed.reset_counts()
    backend = _hooked(armed)
    o, ref = _call(backend, dtype=torch.float32)  # the fixture declares bf16 and fp16 only
    assert len(backend.calls) == 1 and _close(o, ref, "fp32")
    assert armed.counts()[seam.SLOT].stock == 1
    null = arm(None)
    backend = _hooked(null)
    o, ref = _call(backend)
    assert len(backend.calls) == 1 and _close(o, ref) and null.counts()[seam.SLOT].stock == 1


def test_the_engines_index_dtypes_route_and_others_go_stock(armed):
    """The plain extend call hands over the backend's int64 qo_indptr buffer (a slot declaring int32 saw every call of
    a qualification go stock); the speculative paths' int32 qo_indptr is not the slot's call."""
    backend = _hooked(armed)
    for qo, routed in ((torch.int64, 1), (torch.int32, 0)):
        armed.reset_counts()
        o, ref = _call(backend, qo=qo)
        assert _close(o, ref) and armed.counts()[seam.SLOT].routed == routed
        assert armed.counts()[seam.SLOT].stock == 1 - routed


def test_the_seam_parameters_are_the_compat_row():
    [row] = [r for r in seam.SEAMS[0].checks if r.get("target", "").endswith("extend_attention.extend_attention_fwd")]
    assert row["params"] == seam.EXTEND_PARAMS and row["order"]
    assert list(inspect.signature(seam.extend_seam(None, None)).parameters) == seam.EXTEND_PARAMS
    assert seam.TARGET == decode_attention.TARGET  # one AFTER hook target: the backend's __init__ wraps both kernels
