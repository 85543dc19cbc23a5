"""The probe reads a torch custom op's parameters from its registered schema, since SGLang registers the function a
seam hooks as an op (`inspect` sees only *args there), and a reordered or renamed schema fails its row. Its dtype rows
read the tensors a function allocates, since a seam passes them to a slot as they come: the attention slots' index
dtypes are the triton backend's, checked against the pinned SGLang (tests/compat/test_runner.py) and here against the
slots."""

import sys
from pathlib import Path

import torch

from hotfloat.compat import probe
from hotfloat.slots import get_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.seams.triton_backend import CHECKS  # noqa: E402


@torch.library.custom_op("hotfloat_probe_test::fused", mutates_args=())
def _fused(input_tensor: torch.Tensor, residual: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    return input_tensor + residual


TARGET = "torch.ops.hotfloat_probe_test.fused"


def test_a_custom_ops_parameters_come_from_its_schema():
    ok, detail = probe.callable_({"target": TARGET, "params": ["input_tensor", "residual", "eps"], "order": True})
    assert ok and detail == "(input_tensor, residual, eps)"


def test_a_custom_op_with_other_parameters_fails():
    ok, detail = probe.callable_({"target": TARGET, "params": ["residual", "input_tensor"], "order": True})
    assert not ok and "out of order" in detail
    ok, detail = probe.callable_({"target": TARGET, "params": ["input_tensor", "weight"]})
    assert not ok and "missing parameter(s) weight" in detail


def test_plain_functions_still_use_their_signature():
    ok, detail = probe.callable_({"target": "hotfloat.compat.probe.run", "params": ["checks"], "order": True})
    assert ok and detail == "(checks)"


class Backend:
    def __init__(self, n):
        self.qo_indptr = torch.zeros((n + 1,), dtype=torch.int64)
        if n > 4:
            self.kv_indptr = torch.zeros((n + 1,), dtype=torch.int64)
        else:
            self.kv_indptr = torch.zeros((n + 1,), dtype=torch.int32)
        pages = torch.empty(n, dtype=torch.int64)  # noqa: F841


DTYPES = "tests.compat.test_probe.Backend.__init__"


def test_a_dtype_row_passes_when_every_allocation_matches():
    ok, detail = probe.dtypes({"target": DTYPES, "dtypes": {"self.qo_indptr": "torch.int64", "pages": "torch.int64"}})
    assert ok and detail == "self.qo_indptr torch.int64, pages torch.int64"


def test_a_dtype_row_fails_on_another_or_a_second_dtype_or_none():
    ok, detail = probe.dtypes(
        {
            "target": DTYPES,
            "dtypes": {"self.qo_indptr": "torch.int32", "self.kv_indptr": "torch.int32", "x": "torch.int8"},
        }
    )
    assert not ok
    assert detail == (
        "self.qo_indptr is torch.int64, not torch.int32; self.kv_indptr is torch.int32 or torch.int64, not "
        "torch.int32; x is never allocated, not torch.int8"
    )


def test_the_tables_dtypes_are_the_attention_slots_dtypes():
    """What the pinned backend allocates (the attention seams' rows, checked by `hotfloat compat`) is what each
    attention slot declares."""
    rows = {r["target"].rsplit(".", 1)[1]: r["dtypes"] for r in CHECKS if r["kind"] == "dtypes"}
    engine = rows["__init__"] | rows["init_forward_metadata"]
    declared = {
        "attention.prefill": {"qo_indptr": "self.qo_indptr", "kv_indptr": "self.kv_indptr", "kv_indices": "kv_indices"},
        "attention.decode": {"kv_indptr": "self.kv_indptr", "kv_indices": "kv_indices"},
    }
    for slot, args in declared.items():
        spec = get_slot(slot)
        for arg, allocated in args.items():
            assert str(spec.dtype_of(spec.arg(arg), "bf16")) == engine[allocated], (slot, arg)
    assert rows["init_cuda_graph_state"]["self.cuda_graph_kv_indices"] == engine["kv_indices"]
