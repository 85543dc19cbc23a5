"""`hotfloat bundle import`: a bundle written for Cacheon becomes a hotfloat bundle that loads, scans and verifies,
and every change (ABI name, dtype and architecture spellings, metadata keys, setup, unknown slots) is reported."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hotfloat.authoring.cacheon import import_cacheon
from hotfloat.bundle import load_bundle
from hotfloat.errors import HotfloatError, InputError
from hotfloat.scan import scan_bundle

FIXTURE = Path(__file__).parent / "cacheon" / "silu_setup"


def test_import_converts_and_reports_every_change(tmp_path):
    result = import_cacheon(FIXTURE, tmp_path / "out")
    changes = {(c.file, c.field, c.was): c.now for c in result.changes}
    assert changes[("manifest.toml", "abi_version", "cacheon-op-abi-v0")] == "hotfloat-op-abi-v1"
    assert changes[("manifest.toml", "ops[0].dtypes", "bfloat16")] == "bf16"
    assert changes[("manifest.toml", "ops[0].dtypes", "float32")] == "fp32"
    assert "removed" in changes[("manifest.toml", "ops[0].setup", "setup")]
    assert (
        "removed" in changes[("manifest.toml", "competition", '{"mode": "slot", "target": "activation.silu_and_mul"}')]
    )
    assert (
        "no hotfloat slot 'cacheon.fictional_teleport'"
        in changes[("manifest.toml", "ops[1]", "slot 'cacheon.fictional_teleport'")]
    )
    meta = "metadata/silu_and_mul.json"
    assert {k for (f, k, _) in changes if f == meta} == {"dtypes", "op", "capabilities", "notes"}
    assert changes[("manifest.toml", "ops[0].architectures", "(absent)")].startswith("cpu sm_90")

    bundle = load_bundle(tmp_path / "out")
    assert bundle.identity == result.identity and scan_bundle(bundle).clean
    [op] = bundle.ops
    assert op.entry.dtypes == ["fp32", "bf16", "fp16"] and op.metadata.graph_safe and op.metadata.max_num_tokens == 8192
    assert "Plain torch control" in bundle.files["README.md"].decode()


def test_architectures_are_respelled_and_unknown_ones_dropped(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    manifest = src / "manifest.toml"
    manifest.write_text(manifest.read_text().replace('setup = "setup"', 'architectures = ["sm80", "sm90a", "sm120"]'))
    result = import_cacheon(src, tmp_path / "out")
    now = {c.was: c.now for c in result.changes if c.field == "ops[0].architectures"}
    assert now["sm80"] == "sm_80" and now["sm90a"] == "sm_90a" and now["sm120"].startswith("(removed")
    assert load_bundle(tmp_path / "out").ops[0].entry.architectures == ["sm_80", "sm_90a"]


@pytest.mark.parametrize(
    "manifest, says",
    [
        (
            'bundle_id = "x"\nabi_version = "cacheon-op-abi-v0"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
            'source = ["kernels/silu_and_mul.py"]\nentry = "silu_and_mul"\nsetup = "setup"\n',
            "source",
        ),
        ("a" + ".a" * 5000 + " = 1\n", "manifest.toml"),
        ('bundle_id = "x"\n' + "[" * 100 + "\n", "manifest.toml"),
    ],
)
def test_a_hostile_cacheon_manifest_is_one_clear_error(tmp_path, manifest, says):
    """A source that is not a path, a dotted key built to make the TOML parser quadratic, brackets past the depth
    bound: each is one error naming the problem, parsed under the bounds every manifest gets, never a traceback."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURE, src)
    (src / "manifest.toml").write_text(manifest)
    with pytest.raises(HotfloatError, match=says):
        import_cacheon(src, tmp_path / "out")


def test_cli_prints_the_changes_and_the_result_verifies(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "bundle", "import", str(FIXTURE), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    flat = " ".join(p.stdout.split())
    for text in ("cacheon-op-abi-v0", "hotfloat-op-abi-v1", "bfloat16", "setup", "capabilities", "changes; next:"):
        assert text in flat
    v = subprocess.run(
        [
            sys.executable,
            "-m",
            "hotfloat.cli",
            "verify",
            str(tmp_path / "out"),
            "--device",
            "cpu",
            "--dtype",
            "bf16",
            "--trials",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert v.returncode == 0 and json.loads(v.stdout)["status"] == "PASS", v.stdout + v.stderr
    again = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "bundle", "import", str(FIXTURE), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 2 and "not an empty directory" in again.stderr


def test_import_takes_an_archive(tmp_path):
    import io
    import tarfile

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for path in sorted(FIXTURE.rglob("*")):
            if path.is_file():
                tar.add(path, arcname=str(path.relative_to(FIXTURE)))
    archive = tmp_path / "cacheon.tar.gz"
    archive.write_bytes(raw.getvalue())
    from_dir, from_archive = import_cacheon(FIXTURE, tmp_path / "a"), import_cacheon(archive, tmp_path / "b")
    assert from_archive.identity == from_dir.identity and from_archive.changes == from_dir.changes


def write_layout(root: Path, manifest: str, files: dict[str, str]) -> Path:
    """A Cacheon-style example written here (never copied): manifest.toml, kernels/, metadata/."""
    for rel, text in {"manifest.toml": manifest, **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


CACHEON_OP = (
    'bundle_id = "{id}"\nabi_version = "cacheon-op-abi-v0"\n\n[[ops]]\nslot = "{slot}"\n'
    'source = "kernels/{src}.py"\nentry = "{entry}"\ndtypes = ["bfloat16"]\n{extra}'
)


def test_an_entry_written_for_another_call_is_refused_naming_the_difference(tmp_path):
    src = write_layout(
        tmp_path / "rmsnorm_torch",
        CACHEON_OP.format(id="norm", slot="norm.rmsnorm", src="norm", entry="rmsnorm", extra=""),
        {"kernels/norm.py": "import torch\n\n\ndef rmsnorm(x, weight, out):\n    out.zero_()\n"},
    )  # (Cacheon's unpaged attention.decode call is served through an adapter: test_cacheon_adapters)
    with pytest.raises(InputError) as e:
        import_cacheon(src, tmp_path / "out")
    message = str(e.value)
    assert "\n" not in message and "rmsnorm(x, weight, out) takes 3 arguments" in message
    assert "norm.rmsnorm(x[T,H], weight[H], out[T,H], eps=1e-06)" in message and not (tmp_path / "out").exists()


def test_a_setup_hook_and_its_engine_patch_are_removed_so_the_import_scans_clean(tmp_path):
    kernel = (
        "import torch\n\n\ndef silu_and_mul(x, out):\n    d = x.shape[-1] // 2\n"
        "    out.copy_(torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float())\n\n\n"
        "def setup(engine):\n    import sglang.srt.layers.activation as act\n\n"
        "    act.SiluAndMul.forward_cuda = lambda self, x: x\n"
    )
    src = write_layout(
        tmp_path / "setup_demo",
        CACHEON_OP.format(
            id="setup-demo", slot="activation.silu_and_mul", src="silu", entry="silu_and_mul", extra='setup = "setup"\n'
        ),
        {"kernels/silu.py": kernel},
    )
    result = import_cacheon(src, tmp_path / "out")
    assert ("kernels/silu.py", "setup") in {(c.file, c.field) for c in result.changes}
    bundle = load_bundle(tmp_path / "out")
    assert scan_bundle(bundle).clean and b"sglang" not in bundle.files["kernels/silu.py"]
    assert b"def silu_and_mul" in bundle.files["kernels/silu.py"]


def test_a_torch_op_built_for_sm90_imports_as_it_is_and_verify_says_how_to_run_it_here(tmp_path):
    src = write_layout(
        tmp_path / "silu_torch",
        CACHEON_OP.format(
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


def test_a_triton_op_built_for_gpus_gets_cpu_in_one_line_and_verifies_here(tmp_path):
    src = write_layout(
        tmp_path / "silu_triton",
        CACHEON_OP.format(
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
def test_a_triton_op_the_interpreter_cannot_run_keeps_its_gpus_and_says_why(tmp_path, helper, says):
    src = write_layout(
        tmp_path / "silu_triton",
        CACHEON_OP.format(
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


def test_a_hotfloat_bundle_imports_unchanged(tmp_path):
    from hotfloat.bundle import pack

    bundle = load_bundle(Path(__file__).resolve().parents[2] / "examples" / "silu_torch")
    (tmp_path / "b.tar.gz").write_bytes(pack(bundle))
    result = import_cacheon(tmp_path / "b.tar.gz", tmp_path / "out")
    assert result.changes == [] and result.identity == bundle.identity


@pytest.mark.parametrize("source", [(TRITON_SILU + "\ndef (:\n").encode(), b"\xff\xfe" + TRITON_SILU.encode()])
def test_a_kernel_that_does_not_parse_keeps_its_gpus_and_scan_names_it(tmp_path, source):
    """Import reads sources without running them: a file it cannot parse (bad syntax, not UTF-8) gets no cpu and no
    traceback, and the scan the import's next step names refuses that file."""
    src = write_layout(
        tmp_path / "silu_triton",
        CACHEON_OP.format(
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


def test_an_op_for_a_slot_hotfloat_lacks_is_named_where_it_is_refused(tmp_path):
    src = write_layout(
        tmp_path / "teleport",
        CACHEON_OP.format(id="t", slot="cacheon.fictional_teleport", src="k", entry="k", extra=""),
        {"kernels/k.py": "def k(x, out):\n    out.copy_(x)\n"},
    )
    with pytest.raises(InputError, match="no op of this bundle targets a hotfloat slot") as e:
        import_cacheon(src, tmp_path / "out")
    assert "refused: 'cacheon.fictional_teleport'" in str(e.value) and "\n" not in str(e.value)


def test_a_slot_cacheon_spells_otherwise_imports_under_hotfloats_name(tmp_path, monkeypatch):
    from hotfloat.authoring import cacheon

    monkeypatch.setattr(cacheon, "SLOT_NAMES", cacheon.SLOT_NAMES | {"cacheon.fictional_rmsnorm": "norm.rmsnorm"})
    src = write_layout(
        tmp_path / "renamed",
        CACHEON_OP.format(id="r", slot="cacheon.fictional_rmsnorm", src="k", entry="k", extra=""),
        {"kernels/k.py": "def k(x, weight, out, eps):\n    out.copy_(x)\n"},
    )
    result = import_cacheon(src, tmp_path / "out")
    assert ("ops[0].slot", "cacheon.fictional_rmsnorm", "norm.rmsnorm") in {
        (c.field, c.was, c.now) for c in result.changes
    }
    assert load_bundle(tmp_path / "out").ops[0].entry.slot == "norm.rmsnorm"


def run_import(src: Path, out: Path, capsys) -> tuple[str, str]:
    """`hotfloat bundle import SRC --out OUT` in this process: (stdout, stderr) flattened to single spaces."""
    from hotfloat.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["bundle", "import", str(src), "--out", str(out)])
    said = capsys.readouterr()
    assert done.value.code == 0, said.err
    return " ".join(said.out.split()), " ".join(said.err.split())


def test_the_next_step_for_an_all_reduce_bundle_verifies_it_on_two_ranks(tmp_path, capsys):
    kernel = (
        "import torch.distributed as dist\n\n\ndef all_reduce(x, out, group):\n"
        "    out.copy_(x)\n    dist.all_reduce(out, group=group)\n"
    )
    src = write_layout(
        tmp_path / "allreduce",
        CACHEON_OP.format(id="ar", slot="collective.all_reduce", src="ar", entry="all_reduce", extra=""),
        {"kernels/ar.py": kernel},
    )
    out, _ = run_import(src, tmp_path / "out", capsys)
    assert f"hotfloat verify {tmp_path / 'out'} --world-size 2" in out, out


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
def test_an_rmsnorm_writing_out_at_the_inputs_row_stride_imports_with_a_warning(tmp_path, capsys, out_row, warned):
    """Cacheon hands out an output shaped like x; hotfloat's outputs have their own (padded) row stride, so such a
    kernel FAILs every row: the import says why before verify does."""
    src = write_layout(
        tmp_path / "rmsnorm",
        CACHEON_OP.format(id="rms", slot="norm.rmsnorm", src="rms", entry="rmsnorm", extra=""),
        {"kernels/rms.py": RMSNORM_HOST.format(out_row=out_row)},
    )
    result = import_cacheon(src, tmp_path / "lib")
    assert load_bundle(tmp_path / "lib").ops[0].entry.slot == "norm.rmsnorm"
    assert bool(result.warnings) == warned, result.warnings
    _, err = run_import(src, tmp_path / "cli", capsys)
    if warned:
        [warning] = result.warnings
        assert "kernels/rms.py" in warning and "row stride" in warning and "'out'" in warning and "'x'" in warning
        assert f"warning: {' '.join(warning.split())}" in err, err
    else:
        assert "warning" not in err, err


def test_a_cacheon_fused_all_reduce_norm_bundle_imports_and_verifies_on_two_ranks(tmp_path):
    """collective.ar_residual_rmsnorm has Cacheon's name and call order (x, residual, weight, eps, out_norm,
    out_residual, group): the entry is kept as written and passes the multi-rank verifier."""
    from hotfloat.collective import verify_collective
    from hotfloat.verdict import Status

    result = import_cacheon(Path(__file__).parent / "cacheon" / "ar_rmsnorm_torch", tmp_path / "out")
    changes = {(c.field, c.was): c.now for c in result.changes}
    assert changes[("ops[0].dtypes", "bfloat16")] == "bf16" and result.world_size == 2
    bundle = load_bundle(tmp_path / "out")
    [op] = bundle.ops
    assert op.entry.slot == "collective.ar_residual_rmsnorm" and op.entry.dtypes == ["bf16", "fp16", "fp32"]
    assert "def ar_residual_rmsnorm(x, residual, weight, eps, out_norm, out_residual, group):" in (
        bundle.files[op.entry.source].decode()
    )
    report = verify_collective(bundle, world_size=2, dtypes=["bf16"], seed=3)
    assert report.status is Status.PASS, report.reasons
