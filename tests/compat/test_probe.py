"""The probe reads a torch custom op's parameters from its registered schema, since SGLang registers the function a
seam hooks as an op (`inspect` sees only *args there), and a reordered or renamed schema fails its row."""

import torch

from hotfloat.compat import probe


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
