"""Real bench runs on CPU (a sandboxed child, kernels through the Triton interpreter): the examples pass, kernels
that are wrong, or honest only while checked, fail, and the child sees only its own view unless --unsandboxed."""

from pathlib import Path

import pytest

from hotfloat.bench import Options, run_bench
from hotfloat.errors import BundleError, InfrastructureError, InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

LAZY = """\
import torch

_calls = [0]


def wrong(x, out):
    out.zero_()


def lazy(x, out):
    _calls[0] += 1
    if _calls[0] <= 2:
        d = x.shape[1] // 2
        out.copy_(torch.nn.functional.silu(x[:, :d].float()) * x[:, d:].float())


def raises(x, out):
    raise RuntimeError("no kernel for this shape")
"""

MANIFEST = """\
bundle_id = "cheats"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "wrong"
variant = "small"
metadata = "metadata/small.json"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "lazy"
variant = "large"
metadata = "metadata/large.json"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "raises"
variant = "huge"
metadata = "metadata/huge.json"
"""


def test_example_silu_passes_beside_torch_with_the_cpu_caveat():
    opts = Options(device="cpu", dtypes=("bf16", "fp32"), shapes=({"T": 3, "D": 512}, {"T": 1, "D": 2880}))
    r = run_bench(str(EXAMPLES / "silu_triton"), opts)
    assert r.status == "PASS" and not r.meaningful and "meaningless" in r.note
    assert [(row.dtype, row.tokens) for row in r.rows] == [("bf16", 3), ("bf16", 1), ("fp32", 3), ("fp32", 1)]
    for row in r.rows:
        assert [i.name for i in row.impls] == ["ours:default", "torch-eager"]
        assert all(i.check == "PASS" and i.graph is None for i in row.impls)
        assert row.bytes == 3 * row.dims["T"] * row.dims["D"] * (2 if row.dtype == "bf16" else 4)
        assert row.ratio["torch-eager"] > 0 and row.best_stock == "torch-eager" and row.floor_multiple > 0
        assert 0 < row.frac_copy_bw
    assert r.ceilings.copy_Bps > 0 and r.ceilings.floor_graph_us is None


def test_example_rmsnorm_passes_beside_both_torch_kernels():
    r = run_bench(str(EXAMPLES / "rmsnorm_triton"), Options(device="cpu", shapes=({"T": 5, "H": 2880},)))
    assert r.status == "PASS"
    (row,) = r.rows
    assert [i.name for i in row.impls] == ["ours:default", "torch-eager", "torch.rms_norm"]
    assert all(i.check == "PASS" for i in row.impls)


FORGETS_RESIDUAL = """\
import torch


def run(x, residual, weight, out, residual_out, eps):
    s = x.float() + residual.float()
    out.copy_(s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
"""


def test_example_fused_add_rmsnorm_checks_both_outputs_beside_the_unfused_torch_paths():
    shapes = ({"T": 1, "H": 896}, {"T": 7, "H": 1536})
    opts = Options(device="cpu", dtypes=("bf16", "fp16"), shapes=shapes)
    r = run_bench(str(EXAMPLES / "fused_add_rmsnorm_triton"), opts)
    assert r.status == "PASS" and [(row.dtype, row.tokens) for row in r.rows] == [
        ("bf16", 1),
        ("bf16", 7),
        ("fp16", 1),
        ("fp16", 7),
    ]
    for row in r.rows:
        assert [i.name for i in row.impls] == ["ours:default", "torch-eager", "torch add+rms_norm"]
        assert all(i.check == "PASS" for i in row.impls)
        assert row.bytes == (4 * row.dims["T"] + 1) * row.dims["H"] * 2 and row.frac_copy_bw > 0


def test_a_fused_kernel_that_skips_residual_out_fails_on_that_output(make_bundle):
    root = make_bundle(FORGETS_RESIDUAL, slot="norm.fused_add_rmsnorm")
    r = run_bench(str(root), Options(device="cpu", shapes=({"T": 3, "H": 64},)))
    ours = r.rows[0].impls[0]
    assert r.status == "FAIL" and ours.check == "FAIL"
    assert ours.reason.startswith("first call") and "elements of residual_out out of tolerance" in ours.reason
    assert all(i.check == "PASS" for i in r.rows[0].impls[1:])


def test_example_ar_rmsnorm_runs_on_a_one_rank_group_beside_the_unfused_path():
    """A collective is timed on a process group of the child alone; the stock path all-reduces, then fuses."""
    r = run_bench(str(EXAMPLES / "ar_rmsnorm_triton"), Options(device="cpu", shapes=({"T": 5, "H": 256},)))
    assert r.status == "PASS" and "one-rank process group" in r.method["group"]
    (row,) = r.rows
    assert [i.name for i in row.impls] == ["ours:default", "all_reduce+torch-eager", "all_reduce+torch add+rms_norm"]
    assert all(i.check == "PASS" for i in row.impls) and row.ratio["all_reduce+torch-eager"] > 0


def test_a_fused_collective_that_forgets_the_residual_fails(make_bundle):
    kernel = (
        "import torch\n\n\ndef run(x, residual, weight, eps, out, residual_out, group):\n"
        "    s = x.float()\n    residual_out.copy_(s)\n"
        "    out.copy_(s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float())\n"
    )
    root = make_bundle(kernel, slot="collective.ar_residual_rmsnorm")
    r = run_bench(str(root), Options(device="cpu", shapes=({"T": 3, "H": 64},)))
    ours = r.rows[0].impls[0]
    assert r.status == "FAIL" and ours.check == "FAIL" and "elements of out out of tolerance" in ours.reason


def test_wrong_raising_and_honest_only_when_checked_kernels_fail(make_bundle):
    root = make_bundle(
        LAZY,
        manifest=MANIFEST,
        files={
            "metadata/small.json": '{"max_num_tokens": 4}',
            "metadata/large.json": '{"min_num_tokens": 5, "max_num_tokens": 8}',
            "metadata/huge.json": '{"min_num_tokens": 9}',
        },
    )
    r = run_bench(str(root), Options(device="cpu", shapes=({"T": 2, "D": 64}, {"T": 8, "D": 64}, {"T": 16, "D": 64})))
    assert r.status == "FAIL"
    small, large, huge = (row.impls[0] for row in r.rows)
    assert huge.name == "ours:huge" and huge.check == "FAIL" and "no kernel for this shape" in huge.reason
    assert huge.cold is None and r.rows[2].time_us is None
    assert small.name == "ours:small" and small.check == "FAIL" and small.reason.startswith("first call")
    assert large.name == "ours:large" and large.check == "FAIL" and "fresh inputs" in large.reason
    assert all(i.check == "PASS" for row in r.rows for i in row.impls[1:])


def test_bundle_errors_come_back_as_their_own_error_class(make_bundle):
    with pytest.raises(BundleError, match="importing kernels/k.py failed"):
        run_bench(str(make_bundle("raise RuntimeError('boom')\n")), Options(device="cpu", shapes=({"T": 1, "D": 8},)))
    with pytest.raises(InputError, match="no such bundle"):
        run_bench("/nonexistent/bundle", Options(device="cpu"))


PROBE = """\
import os

import torch

SECRET = {secret!r}


def run(x, out):
    seen = [what for what, hit in (("the host file", os.path.exists(SECRET)),
                                   ("the caller's environment", "HOTFLOAT_TEST_SECRET" in os.environ)) if hit]
    try:
        open(__file__ + ".written", "w").close()
        seen.append("a writable bundle")
    except OSError:
        pass
    if seen:
        raise RuntimeError("saw " + ", ".join(seen))
    d = x.shape[1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d].float()) * x[:, d:].float())
"""


def test_the_child_sees_neither_host_files_nor_the_environment_and_cannot_write_the_bundle(
    make_bundle, tmp_path, monkeypatch
):
    secret = tmp_path / "secret"
    secret.write_text("key")
    monkeypatch.setenv("HOTFLOAT_TEST_SECRET", "1")
    root = make_bundle(PROBE.format(secret=str(secret)))
    opts = Options(device="cpu", shapes=({"T": 2, "D": 64},), stock=())
    seen = []
    r = run_bench(str(root), opts, lambda *done_total_label: seen.append(done_total_label))
    assert r.status == "PASS" and r.rows[0].impls[0].check == "PASS", r.rows[0].impls[0].reason
    assert [s[:2] for s in seen] == [(0, 1)] and seen[0][2].startswith("activation.silu_and_mul bf16")
    assert r.sandboxed and {"namespaces", "seccomp", "rlimits", "pids"} <= set(r.bounds)
    r = run_bench(str(root), opts, sandboxed=False)
    assert r.status == "FAIL" and not r.sandboxed and "namespaces" not in r.bounds
    assert "saw the host file, the caller's environment, a writable bundle" in r.rows[0].impls[0].reason
    assert not (root / "kernels" / "k.py.written").exists()  # the child wrote only its staged copy


def test_a_hung_kernel_is_killed_at_the_run_deadline(make_bundle):
    root = make_bundle("import time\n\n\ndef run(x, out):\n    time.sleep(600)\n")
    with pytest.raises(InfrastructureError, match="no result within 3s; the child was killed"):
        run_bench(str(root), Options(device="cpu", shapes=({"T": 1, "D": 8},), stock=()), timeout_s=3)
