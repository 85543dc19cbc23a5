"""The SGLang decode-attention seam: SGLang's `decode_attention_fwd` call routed to an armed attention.decode op
inside its domain (a plain-torch bundle, fixtures/attention_torch), to SGLang's kernel otherwise.

SGLang itself is not installed in the test venv; `sglang_decode` below stands in for its kernel with the same
signature and writes into `o` as it does. The hook target and parameters are checked at the pin by `hotfloat compat`
(the seam's own compat rows), and this test keeps the seam's parameter list equal to that row.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from hotfloat.seams import arm
from hotfloat.slots import get_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams import decode_attention as seam  # noqa: E402

SLOT = get_slot("attention.decode")
DIMS = {"B": 3, "S": 40, "P": 80, "N": 80, "Hq": 8, "Hkv": 2, "D": 64}


class Backend:
    """What the hook touches on SGLang's TritonAttnBackend: the decode kernel attribute its __init__ sets."""

    def __init__(self):
        self.calls = []
        self.decode_attention_fwd = self.sglang_decode

    def sglang_decode(
        self,
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
        self.calls.append(
            {
                "logit_cap": logit_cap,
                "sinks": sinks,
                "k_scale": k_scale,
                "has_mla": has_mla,
                "xai_temperature_len": xai_temperature_len,
                "o": o,
            }
        )
        t = {
            "q": q,
            "k_buffer": k_buffer,
            "v_buffer": v_buffer,
            "kv_indptr": kv_indptr[: q.shape[0] + 1],
            "kv_indices": kv_indices,
            "sm_scale": sm_scale,
        }
        o.copy_(SLOT.reference(t)["out"])


@pytest.fixture(scope="module")
def armed():
    return arm(Path(__file__).parent / "fixtures" / "attention_torch")


def _call(backend, dtype=torch.bfloat16, indptr_pad=0, **extra):
    gen = torch.Generator().manual_seed(5)
    t = SLOT.make_inputs(DIMS, dtype, gen) | SLOT.make_scalars(DIMS, gen)
    indptr = torch.cat([t["kv_indptr"], t["kv_indptr"][-1:].repeat(indptr_pad)])
    o = torch.full_like(t["q"], float("nan"))
    b, hq = DIMS["B"], DIMS["Hq"]
    args = dict(logit_cap=0.0, sinks=None, xai_temperature_len=-1, has_mla=False, use_pdl=False) | extra
    k_scale = args.pop("k_scale", 1.0)
    backend.decode_attention_fwd(
        t["q"],
        t["k_buffer"],
        t["v_buffer"],
        o,
        indptr,
        t["kv_indices"],
        torch.empty(b, hq, 8, DIMS["D"]),
        torch.empty(b, hq, 8),
        torch.full((b,), 8),
        8,
        t["sm_scale"],
        k_scale,
        1.0,
        **args,
    )
    return o, SLOT.reference(t)["out"]


def _hooked(router) -> Backend:
    backend = Backend()
    assert seam.backend_init_hook(router)(None, backend, "model_runner") is None
    return backend


def _close(o, ref, dtype="bf16"):
    tol = SLOT.tolerances[dtype]
    return bool(((o.float() - ref).abs() <= tol.atol + tol.rtol * ref.abs()).all())


@pytest.mark.parametrize("pad", [0, 5])
def test_plain_calls_run_the_armed_kernel_into_sglangs_output(armed, pad):
    armed.reset_counts()
    backend = _hooked(armed)
    o, ref = _call(backend, indptr_pad=pad)  # pad: the graph-captured backend's kv_indptr is sized for max batch
    assert backend.calls == [] and _close(o, ref)
    assert armed.counts()[seam.SLOT].routed == 1 and armed.counts()[seam.SLOT].stock == 0


@pytest.mark.parametrize(
    "extra",
    [
        {"logit_cap": 30.0},
        {"sinks": torch.zeros(8)},
        {"k_scale": 0.5},
        {"has_mla": True},
        {"xai_temperature_len": 4096},
    ],
)
def test_variants_the_slot_does_not_compute_go_to_sglang_unchanged(armed, extra):
    armed.reset_counts()
    backend = _hooked(armed)
    o, ref = _call(backend, **extra)
    [call] = backend.calls
    for key, value in extra.items():
        assert call[key] is value or call[key] == value
    assert _close(o, ref) and call["o"].data_ptr() == o.data_ptr()  # SGLang's kernel wrote SGLang's own buffer
    assert armed.counts()[seam.SLOT].stock == 1 and armed.counts()[seam.SLOT].routed == 0


def test_outside_the_declared_dtypes_and_null_armed_calls_are_stock(armed):
    armed.reset_counts()
    backend = _hooked(armed)
    o, ref = _call(backend, dtype=torch.float32)  # the example declares bf16 and fp16 only
    assert len(backend.calls) == 1 and _close(o, ref, "fp32")
    assert armed.counts()[seam.SLOT].stock == 1
    null = arm(None)
    backend = _hooked(null)
    o, ref = _call(backend)
    assert len(backend.calls) == 1 and null.counts()[seam.SLOT].stock == 1


def test_the_seam_parameters_are_the_compat_row():
    [row] = [r for r in seam.SEAMS[0].checks if r.get("target", "").endswith("decode_attention.decode_attention_fwd")]
    assert row["params"] == seam.DECODE_PARAMS and row["order"]
    assert any(r.get("target") == seam.TARGET for r in seam.SEAMS[0].checks)
    import inspect

    assert list(inspect.signature(seam.decode_seam(None, None)).parameters) == seam.DECODE_PARAMS
