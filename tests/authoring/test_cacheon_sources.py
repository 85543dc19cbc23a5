"""Bundle import of Cacheon kernels whose sources need a look: setup hooks and their engine patch removed, the
architectures a torch or Triton op is built for respelt (and cpu added where the interpreter runs it), a source that
does not parse, an output written at an input's row stride (hotfloat.authoring.cacheon_sources)."""

import json
import os
import subprocess
import sys

import pytest

from hotfloat.authoring.cacheon import import_cacheon
from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle


def test_a_setup_hook_and_its_engine_patch_are_removed_so_the_import_scans_clean(tmp_path, write_layout, cacheon_op):
    kernel = (
        "import torch\n\n\ndef silu_and_mul(x, out):\n    d = x.shape[-1] // 2\n"
        "    out.copy_(torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float())\n\n\n"
        "def setup(engine):\n    import sglang.srt.layers.activation as act\n\n"
        "    act.SiluAndMul.forward_cuda = lambda self, x: x\n"
    )
    src = write_layout(
        tmp_path / "setup_demo",
        cacheon_op.format(
            id="setup-demo", slot="activation.silu_and_mul", src="silu", entry="silu_and_mul", extra='setup = "setup"\n'
        ),
        {"kernels/silu.py": kernel},
    )
    result = import_cacheon(src, tmp_path / "out")
    assert ("kernels/silu.py", "setup") in {(c.file, c.field) for c in result.changes}
    bundle = load_bundle(tmp_path / "out")
    assert scan_bundle(bundle).clean and b"sglang" not in bundle.files["kernels/silu.py"]
    assert b"def silu_and_mul" in bundle.files["kernels/silu.py"]


def test_a_torch_op_built_for_sm90_imports_as_it_is_and_verify_says_how_to_run_it_here(
    tmp_path, write_layout, cacheon_op
):
    src = write_layout(
        tmp_path / "silu_torch",
        cacheon_op.format(
            id="silu-torch",
            slot="activation.silu_and_mul",
            src="silu",
            entry="silu_and_mul",
            extra='architectures = ["sm90"]\n',
        ),
        {"kernels/silu.py": "import torch\n\n\ndef silu_and_mul(x, out):\n    out.copy_(x[..., : x.shape[-1] // 2])\n"},
    )
    import_cacheon(src, tmp_path / "out")
    assert load_bundle(tmp_path / "out").ops[0].entry.architectures == ["sm_90"], "only Triton is known to run on CPU"
    v = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "verify", str(tmp_path / "out"), "--device", "cpu"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 4 and 'add "cpu" to its architectures' in " ".join(v.stdout.split()), v.stdout


TRITON_SILU = """import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul(x_ptr, out_ptr, t, d, x_stride, out_stride, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = (rows[:, None] < t) & (cols[None, :] < d)
    x = x_ptr + rows[:, None].to(tl.int64) * x_stride + cols[None, :]
    gate = tl.load(x, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(x + d, mask=mask, other=0.0).to(tl.float32)
    y = gate / (1.0 + tl.exp(-gate)) * up
    tl.store(out_ptr + rows[:, None].to(tl.int64) * out_stride + cols[None, :], y.to(out_ptr.dtype.element_ty),
             mask=mask)


def silu_and_mul(x, out):
    t, d = x.shape[0], x.shape[1] // 2
    block_d = min(triton.next_power_of_2(d), 4096)
    block_t = max(1, 16384 // block_d)
    _silu_mul[(triton.cdiv(t, block_t), triton.cdiv(d, block_d))](x, out, t, d, x.stride(0), out.stride(0),
                                                                  BLOCK_T=block_t, BLOCK_D=block_d)
"""


def test_a_triton_op_built_for_gpus_gets_cpu_in_one_line_and_verifies_here(tmp_path, write_layout, cacheon_op):
    src = write_layout(
        tmp_path / "silu_triton",
        cacheon_op.format(
            id="silu-triton",
            slot="activation.silu_and_mul",
            src="silu",
            entry="silu_and_mul",
            extra='architectures = ["sm90"]\n',
        ),
        {"kernels/silu.py": TRITON_SILU},
    )
    p = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "bundle", "import", str(src), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "120"},
    )
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stdout.splitlines() if "TRITON_INTERPRET" in line]
    assert len(said) == 1 and "ops[0].architectures: sm_90 -> cpu sm_90 (added" in said[0], p.stdout
    assert load_bundle(tmp_path / "out").ops[0].entry.architectures == ["cpu", "sm_90"]
    v = subprocess.run(
        [
            sys.executable,
            "-m",
            "hotfloat.cli",
            "verify",
            str(tmp_path / "out"),
            "--device",
            "cpu",
            "--trials",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0 and json.loads(v.stdout)["status"] == "PASS", v.stdout + v.stderr


@pytest.mark.parametrize("source", [(TRITON_SILU + "\ndef (:\n").encode(), b"\xff\xfe" + TRITON_SILU.encode()])
def test_a_kernel_that_does_not_parse_keeps_its_gpus_and_scan_names_it(tmp_path, source, write_layout, cacheon_op):
    """Import reads sources without running them: a file it cannot parse (bad syntax, not UTF-8) gets no cpu and no
    traceback, and the scan the import's next step names refuses that file."""
    src = write_layout(
        tmp_path / "silu_triton",
        cacheon_op.format(
            id="silu-triton",
            slot="activation.silu_and_mul",
            src="silu",
            entry="silu_and_mul",
            extra='architectures = ["sm90"]\n',
        ),
        {},
    )
    (src / "kernels").mkdir()
    (src / "kernels" / "silu.py").write_bytes(source)
    import_cacheon(src, tmp_path / "out")
    bundle = load_bundle(tmp_path / "out")
    assert bundle.ops[0].entry.architectures == ["sm_90"]
    report = scan_bundle(bundle)
    assert not report.clean and any("silu.py" in f for o in report.ops for f in o.findings), report


RMSNORM_HOST = """import triton
import triton.language as tl


@triton.jit
def _norm(x_ptr, w_ptr, out_ptr, eps, h, x_row, out_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * x_row + cols, mask=cols < h, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < h, other=0.0).to(tl.float32)
    y = x / tl.sqrt(tl.sum(x * x, axis=0) / h + eps) * w
    tl.store(out_ptr + row * out_row + cols, y.to(out_ptr.dtype.element_ty), mask=cols < h)


def rmsnorm(x, weight, out, eps):
    rows = x.reshape(-1, x.shape[-1])
    dest = out.reshape(-1, out.shape[-1])
    _norm[(rows.shape[0],)](rows, weight, dest, eps, rows.shape[1], rows.stride(0), {out_row},
                            BLOCK=triton.next_power_of_2(rows.shape[1]))
"""


@pytest.mark.parametrize("out_row, warned", [("rows.stride(0)", True), ("dest.stride(0)", False)])
def test_an_rmsnorm_writing_out_at_the_inputs_row_stride_imports_with_a_warning(
    tmp_path, capsys, out_row, warned, write_layout, cacheon_op, run_import
):
    """Cacheon hands out an output shaped like x; hotfloat's outputs have their own (padded) row stride, so such a
    kernel FAILs every row: the import says why before verify does."""
    src = write_layout(
        tmp_path / "rmsnorm",
        cacheon_op.format(id="rms", slot="norm.rmsnorm", src="rms", entry="rmsnorm", extra=""),
        {"kernels/rms.py": RMSNORM_HOST.format(out_row=out_row)},
    )
    result = import_cacheon(src, tmp_path / "lib")
    assert load_bundle(tmp_path / "lib").ops[0].entry.slot == "norm.rmsnorm"
    assert bool(result.warnings) == warned, result.warnings
    _, err = run_import(src, tmp_path / "cli")
    if warned:
        [warning] = result.warnings
        assert "kernels/rms.py" in warning and "row stride" in warning and "'out'" in warning and "'x'" in warning
        assert f"warning: {' '.join(warning.split())}" in err, err
    else:
        assert "warning" not in err, err


@pytest.mark.parametrize(
    "helper, says",
    [
        (
            "@triton.jit\ndef _f(x):\n    return tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.int32,"
            " is_pure=True, pack=1)\n",
            "kernels/silu.py uses inline assembly",
        ),
        ("from triton.language.extra import libdevice\n", "kernels/silu.py uses libdevice externs"),
    ],
)
def test_a_triton_op_the_interpreter_cannot_run_keeps_its_gpus_and_says_why(
    tmp_path, helper, says, write_layout, cacheon_op
):
    src = write_layout(
        tmp_path / "silu_triton",
        cacheon_op.format(
            id="silu-triton",
            slot="activation.silu_and_mul",
            src="silu",
            entry="silu_and_mul",
            extra='architectures = ["sm90"]\n',
        ),
        {"kernels/silu.py": TRITON_SILU + "\n\n" + helper},
    )
    result = import_cacheon(src, tmp_path / "out")
    [change] = [c for c in result.changes if c.was == "sm_90"]
    assert change.field == "ops[0].architectures" and change.now.startswith(f"(cpu not added: {says}")
    assert load_bundle(tmp_path / "out").ops[0].entry.architectures == ["sm_90"]
