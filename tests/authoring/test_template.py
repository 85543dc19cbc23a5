"""`hotfloat new DIR --slot SLOT [--slot ...]`: a bundle for every registered slot, or for several at once, that passes
scan and the real, sandboxed verify, with each entry's parameters exactly its slot's call order."""

import ast
import json
import re
import shlex
import subprocess
import sys

import pytest

from hotfloat.authoring.template import BODIES, write_template
from hotfloat.bundle import load_bundle
from hotfloat.scan import scan_bundle
from hotfloat.slots import SLOTS, get_slot
from hotfloat.verdict import Status


def hotfloat(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", *map(str, args)], capture_output=True, text=True, timeout=600, cwd=cwd
    )


def test_every_registered_slot_has_a_template():
    assert set(BODIES) == set(SLOTS)


@pytest.mark.parametrize("slot", sorted(SLOTS))
def test_template_scans_clean_and_verifies(slot, tmp_path):
    write_template(tmp_path / "b", [slot])
    bundle = load_bundle(tmp_path / "b")
    assert scan_bundle(bundle).clean
    op = bundle.ops[0]
    tree = ast.parse(bundle.files[op.entry.source].decode())
    [fn] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == op.entry.entry]
    assert [a.arg for a in fn.args.args] == [a.name for a in get_slot(slot).args]
    if get_slot(slot).world_size > 1:
        from hotfloat.collective import verify_collective

        report = verify_collective(bundle, world_size=2, dtypes=["fp32"], timeout_s=60)
    else:
        from hotfloat.verify import VerifyOptions, verify_bundle

        report = verify_bundle(bundle, VerifyOptions(device="cpu", max_shapes=2, trials=2))
    assert report.status is Status.PASS, [r.reason for r in report.rows if r.status is not Status.PASS]


def test_new_then_full_cli_verify_passes(tmp_path):
    made = hotfloat("new", tmp_path / "mine", "--slot", "norm.rmsnorm", "--json")
    assert made.returncode == 0, made.stderr
    assert sorted(json.loads(made.stdout)["files"]) == sorted(
        str(tmp_path / "mine" / f)
        for f in ("manifest.toml", "kernels/rmsnorm.py", "metadata/rmsnorm.json", "README.md")
    )
    verified = hotfloat("verify", "mine", "--device", "cpu", cwd=tmp_path)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert "PASS in" in verified.stdout


def test_new_refuses_unknown_slot_and_non_empty_directory(tmp_path):
    p = hotfloat("new", tmp_path / "x", "--slot", "norm.nope")
    assert p.returncode == 2 and p.stderr.startswith("error: unknown slot 'norm.nope'") and "norm.rmsnorm" in p.stderr
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.py").write_text("keep me")
    p = hotfloat("new", tmp_path / "full", "--slot", "norm.rmsnorm")
    assert p.returncode == 2 and "not an empty directory" in p.stderr
    assert (tmp_path / "full" / "mine.py").read_text() == "keep me"


def test_slots_prints_the_call_each_entry_receives():
    p = hotfloat("slots", "--json")
    rows = {r["name"]: r for r in json.loads(p.stdout)}
    assert rows["norm.rmsnorm"]["signature"] == "norm.rmsnorm(x[T,H], weight[H], out[T,H], eps=1e-06)"
    assert rows["norm.rmsnorm"]["writes"] == ["out"]
    for name, spec in SLOTS.items():
        assert [a["name"] for a in rows[name]["args"]] == [a.name for a in spec.args]
    table = hotfloat("slots").stdout
    assert "collective.all_reduce(x[T,H], out[T,H]" in " ".join(table.split())


@pytest.mark.parametrize("slot", ["collective.all_reduce", "activation.silu_and_mul"])
def test_the_next_hint_and_every_readme_command_run(slot, tmp_path):
    made = hotfloat("new", "b", "--slot", slot, cwd=tmp_path)
    hint = made.stdout.strip().splitlines()[-1]
    assert hint.startswith("next: hotfloat verify b") and ("--world-size 2" in hint) == (
        slot == "collective.all_reduce"
    )
    steps = re.findall(r"^    (hotfloat .+)$", (tmp_path / "b" / "README.md").read_text(), re.M)
    assert steps[0] == "hotfloat scan ." and steps[-1] == "hotfloat chain package ."
    for step in steps:
        argv = shlex.split(step)[1:] + (
            ["--device", "cpu", "--shape", "T=8,D=64"] if step == "hotfloat bench ." else []
        )
        done = hotfloat(*argv, cwd=tmp_path / "b")
        assert done.returncode == 0, f"$ {step}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_several_slots_make_one_bundle_with_an_op_each_and_every_next_line_passes(tmp_path):
    slots = ["activation.silu_and_mul", "norm.rmsnorm", "collective.all_reduce"]
    made = hotfloat("new", "b", *[a for s in slots for a in ("--slot", s)], cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert [op.slot for op in load_bundle(tmp_path / "b").manifest.ops] == slots
    hints = [line.removeprefix("next: ") for line in made.stdout.splitlines() if line.startswith("next: ")]
    assert hints == ["hotfloat verify b", "hotfloat verify b --world-size 2"]
    for hint in hints:
        done = hotfloat(*shlex.split(hint)[1:], "--device", "cpu", "--dtype", "fp32", cwd=tmp_path)
        assert done.returncode == 0, f"$ {hint}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


@pytest.mark.parametrize(
    "args,why",
    [
        (["--id", "bad id!"], "--id 'bad id!': a bundle_id is 1-64 letters"),
        (["--id", "x" * 65], "a bundle_id is 1-64 letters"),
        (["--slot", "norm.rmsnorm"], "--slot norm.rmsnorm is given twice"),
    ],
)
def test_new_refuses_what_every_later_command_would_refuse_and_writes_nothing(args, why, tmp_path):
    p = hotfloat("new", tmp_path / "b", "--slot", "norm.rmsnorm", *args)
    assert p.returncode == 2 and p.stderr.startswith("error: ") and why in p.stderr and "next:" not in p.stdout, (
        p.stderr
    )
    assert not (tmp_path / "b").exists()
