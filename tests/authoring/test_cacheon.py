"""`hotfloat bundle import`: a bundle written for Cacheon becomes a hotfloat bundle that loads, scans and verifies,
and every change (ABI name, dtype and architecture spellings, metadata keys, setup, unknown slots) is reported."""

import json
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


def test_an_entry_written_for_another_call_is_refused_naming_the_difference(tmp_path, write_layout, cacheon_op):
    src = write_layout(
        tmp_path / "rmsnorm_torch",
        cacheon_op.format(id="norm", slot="norm.rmsnorm", src="norm", entry="rmsnorm", extra=""),
        {"kernels/norm.py": "import torch\n\n\ndef rmsnorm(x, weight, out):\n    out.zero_()\n"},
    )  # (Cacheon's unpaged attention.decode call is served through an adapter: test_cacheon_adapters)
    with pytest.raises(InputError) as e:
        import_cacheon(src, tmp_path / "out")
    message = str(e.value)
    assert "\n" not in message and "rmsnorm(x, weight, out) takes 3 arguments" in message
    assert "norm.rmsnorm(x[T,H], weight[H], out[T,H], eps=1e-06)" in message and not (tmp_path / "out").exists()


def test_a_hotfloat_bundle_imports_unchanged(tmp_path):
    from hotfloat.bundle import pack

    bundle = load_bundle(Path(__file__).resolve().parents[2] / "examples" / "silu_torch")
    (tmp_path / "b.tar.gz").write_bytes(pack(bundle))
    result = import_cacheon(tmp_path / "b.tar.gz", tmp_path / "out")
    assert result.changes == [] and result.identity == bundle.identity


def test_an_op_for_a_slot_hotfloat_lacks_is_named_where_it_is_refused(tmp_path, write_layout, cacheon_op):
    src = write_layout(
        tmp_path / "teleport",
        cacheon_op.format(id="t", slot="cacheon.fictional_teleport", src="k", entry="k", extra=""),
        {"kernels/k.py": "def k(x, out):\n    out.copy_(x)\n"},
    )
    with pytest.raises(InputError, match="no op of this bundle implements a hotfloat slot.s call") as e:
        import_cacheon(src, tmp_path / "out")
    assert "refused: 'cacheon.fictional_teleport'" in str(e.value) and "\n" not in str(e.value)


def test_an_override_of_a_cacheon_base_kernel_is_refused_not_imported_as_the_whole_call(
    tmp_path, write_layout, cacheon_op
):
    """Cacheon's override ops ship one piece (an epilogue) of a kernel its validator owns; dropping the two fields
    would import the piece as the slot's whole call, to FAIL verify on a compile error. Refused, naming the override;
    a whole op beside it still imports."""
    override = 'base_kernel = "nvfp4_moe_megakernel"\noverride_point = "gemm1_epilogue"\n'
    manifest = cacheon_op.format(id="m", slot="moe.fused_experts", src="e", entry="epilogue", extra=override)
    src = write_layout(tmp_path / "override", manifest, {"kernels/e.py": "def epilogue(gate, up):\n    return up\n"})
    with pytest.raises(InputError, match="implements a hotfloat slot.s call") as e:
        import_cacheon(src, tmp_path / "out")
    assert "'moe.fused_experts' (an override of nvfp4_moe_megakernel at gemm1_epilogue)" in str(e.value)
    whole = "\n[[ops]]\n" + cacheon_op.split("[[ops]]\n")[1].format(
        slot="activation.silu_and_mul", src="s", entry="s", extra=""
    )
    mixed = write_layout(
        tmp_path / "mixed",
        manifest + whole,
        {
            "kernels/e.py": "def epilogue(gate, up):\n    return up\n",
            "kernels/s.py": "def s(x, out):\n    out.copy_(x)\n",
        },
    )
    result = import_cacheon(mixed, tmp_path / "out2")
    assert [op.entry.slot for op in load_bundle(tmp_path / "out2").ops] == ["activation.silu_and_mul"]
    assert any("hotfloat owns no base kernels" in c.now for c in result.changes)


def test_a_slot_cacheon_spells_otherwise_imports_under_hotfloats_name(tmp_path, monkeypatch, write_layout, cacheon_op):
    from hotfloat.authoring import cacheon

    monkeypatch.setattr(cacheon, "SLOT_NAMES", cacheon.SLOT_NAMES | {"cacheon.fictional_rmsnorm": "norm.rmsnorm"})
    src = write_layout(
        tmp_path / "renamed",
        cacheon_op.format(id="r", slot="cacheon.fictional_rmsnorm", src="k", entry="k", extra=""),
        {"kernels/k.py": "def k(x, weight, out, eps):\n    out.copy_(x)\n"},
    )
    result = import_cacheon(src, tmp_path / "out")
    assert ("ops[0].slot", "cacheon.fictional_rmsnorm", "norm.rmsnorm") in {
        (c.field, c.was, c.now) for c in result.changes
    }
    assert load_bundle(tmp_path / "out").ops[0].entry.slot == "norm.rmsnorm"


def test_the_next_step_for_an_all_reduce_bundle_verifies_it_on_two_ranks(
    tmp_path, capsys, write_layout, cacheon_op, run_import
):
    kernel = (
        "import torch.distributed as dist\n\n\ndef all_reduce(x, out, group):\n"
        "    out.copy_(x)\n    dist.all_reduce(out, group=group)\n"
    )
    src = write_layout(
        tmp_path / "allreduce",
        cacheon_op.format(id="ar", slot="collective.all_reduce", src="ar", entry="all_reduce", extra=""),
        {"kernels/ar.py": kernel},
    )
    out, _ = run_import(src, tmp_path / "out")
    assert f"hotfloat verify {tmp_path / 'out'} --world-size 2" in out, out


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
