"""`hotfloat demo`: the arena end to end on CPU (real chain stand-in, HTTPS origin, services, pipeline, weights), and
`--examples`, which fails when any bundle's verdict differs from the one it is meant to get."""

import json
import shutil
import subprocess
import sys

from ..conftest import EXAMPLES


def hotfloat(*args):
    return subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", *map(str, args)], capture_output=True, text=True, timeout=900
    )


def test_arena_stops_the_broken_the_cheats_and_the_copier_and_weights_the_honest_miner(tmp_path):
    p = hotfloat("demo", "--workdir", tmp_path / "arena", "--json")
    assert p.returncode == 0, p.stdout + p.stderr[-3000:]
    out = json.loads(p.stdout)
    rows = {r["miner"]: r for r in out["rows"]}
    assert all(r["as_expected"] for r in rows.values())
    assert rows["bob"]["stages"]["admit"] == "FAIL" and "outside atol" in rows["bob"]["reason"]
    assert rows["carol"]["stages"]["admit"] == "FAIL" and "fp32" in rows["carol"]["reason"]
    assert rows["dave"]["stages"] == {"intake": "PASS", "scan": "FAIL"} and "socket" in rows["dave"]["reason"]
    alice, mallory = rows["alice"], rows["mallory"]
    assert alice["stages"]["build"] == "N/A" and alice["stages"]["admit"] == "PASS"
    assert mallory["stages"] == {"intake": "FAIL"} and mallory["reason"].startswith(f"copy_of:{alice['identity']}: ")
    assert mallory["report"][0].startswith("copies: copy_of, evidence ")
    assert (
        rows["bob"]["report"][0].startswith("admit: verify_failed, evidence ")
        and "verify_seed" in rows["bob"]["report"][0]
    )
    if alice["state"] == "scored":  # the honest kernel, crowned and weighted on the stand-in chain
        assert alice["crown"] == "winner" and out["weights"] == {"1": 65535}
    else:  # CPU noise: the rule declines to decide, or fails it as not shown faster (never as slower), as the demo says
        assert (alice["state"] == "no_decision" or alice["not_shown"]) and out["weights"] == {}, alice
    for step in (
        "committed digest",
        "revealed at block",
        "intake",
        "scan",
        "admit",
        "qualify",
        "weights",
        "signature verified",
        "reads its report",
    ):
        assert step in p.stderr, step
    assert "alice qualify: booting" in p.stderr and "alice qualify: round" in p.stderr  # its progress, relayed
    assert any("calibration knob" in s for s in out["settings"])


def test_examples_mode_fails_when_a_verdict_is_not_the_expected_one(tmp_path):
    for name in ("silu_torch", "silu_broken", "silu_banned_import"):
        shutil.copytree(EXAMPLES / name, tmp_path / name)
    (tmp_path / "bad_manifest" / "kernels").mkdir(parents=True)
    (tmp_path / "bad_manifest" / "manifest.toml").write_text("bundle_id = [")
    expected = {"silu_torch": "PASS", "silu_broken": "FAIL", "silu_banned_import": "FAIL", "bad_manifest": "FAIL"}
    (tmp_path / "expected.toml").write_text("".join(f'{k} = "{v}"\n' for k, v in expected.items()))
    p = hotfloat("demo", "--examples", tmp_path, "--json", "--seed", "7")
    assert p.returncode == 0, p.stdout + p.stderr
    rows = {r["bundle"]: r for r in json.loads(p.stdout)}
    assert {k: r["verdict"] for k, r in rows.items()} == expected
    assert rows["silu_broken"]["verdict"] == "FAIL" and "outside atol" in rows["silu_broken"]["detail"]
    assert rows["silu_banned_import"]["scan"] == "VIOLATIONS" and "socket" in rows["silu_banned_import"]["detail"]
    assert rows["bad_manifest"]["scan"] == "INVALID" and "not valid TOML" in rows["bad_manifest"]["detail"]

    (tmp_path / "expected.toml").write_text("".join(f'{k} = "PASS"\n' for k in expected))
    p = hotfloat("demo", "--examples", tmp_path, "--seed", "7")
    assert p.returncode == 1
    assert "silu_broken" in p.stdout and "expected" in p.stdout


def test_example_expectations_cover_every_example():
    import tomllib

    expected = tomllib.loads((EXAMPLES / "expected.toml").read_text())
    names = {p.name for p in EXAMPLES.iterdir() if (p / "manifest.toml").exists()}
    assert set(expected) == names
    assert set(expected.values()) <= {"PASS", "FAIL", "NO_DECISION", "N/A"}


def test_examples_mode_without_expectations_is_one_clear_line(tmp_path):
    p = hotfloat("demo", "--examples", tmp_path)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "has no expected.toml" in p.stderr, p.stderr
    assert "Errno" not in p.stderr and f"hotfloat verify {tmp_path}" in p.stderr


def test_the_summary_explains_the_weights_and_ends_on_the_verdict(capsys):
    """A crown's 0.8 as the validator logs it, the chain's u16 row and the table's share of 1.00 are one weight,
    said so; the settings come first and the last line is the verdict."""
    from hotfloat.cli.arena import Outcome, Row, settings
    from hotfloat.cli.demo_cmd import _summary

    rows = [
        Row("alice", 1, "honest", stages={"scan": "PASS"}, state="scored", crown="winner", weight=1.0),
        Row("bob", 2, "broken", stages={"admit": "FAIL"}, state="failed", reason="admit: wrong", as_expected=True),
    ]
    rows[0].as_expected = True
    _summary(Outcome(rows=rows, weights={1: 65535}, settings=settings(128), seconds=80))
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert out.index("calibration knob") < out.index("hotfloat demo: the arena")
    assert "(u16 by uid) is {1: 65535}" in flat and "pays its winner 0.8" in flat and "`share` is each uid" in flat
    assert out.splitlines()[-1] == "demo: every miner ended where it should (exit 0)"
    rows[1].as_expected = False
    _summary(Outcome(rows=rows, weights={}, settings=settings(0), seconds=80))
    assert capsys.readouterr().out.splitlines()[-1] == "demo: bob did not end where expected (exit 1)"
