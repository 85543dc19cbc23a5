"""The live tier's orchestration and judging, against a stand-in engine speaking the offline driver's spec/result
protocol with the same seam environment (the real SGLang boots run on the H200: the seams_live recipe)."""

import os
import sys
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.errors import BundleError, InfrastructureError
from hotfloat.seams.live import ArmSpec, Expect, LiveConfig, run_live
from hotfloat.verdict import Status

HERE = Path(__file__).parent
FIXTURES = HERE / "fixtures"
STANDIN = (sys.executable, str(HERE / "standin_engine.py"), "{spec}")
SILU = "activation.silu_and_mul"
NULL = ArmSpec("null", None, Expect.REFERENCE, (SILU,))
EXACT = ArmSpec("exact", str(FIXTURES / "silu_exact"), Expect.EQUAL, (SILU,))
BROKEN = ArmSpec("broken", str(FIXTURES / "silu_broken"), Expect.DIFFER, (SILU,))
MISSING = ArmSpec("missing", "/nonexistent/bundle", Expect.BOOT_FAILS)


def config(tmp_path, arms, **kw):
    model = tmp_path / "model"
    model.mkdir(exist_ok=True)
    base = dict(
        engine_python=sys.executable,
        model_path=str(model),
        arms=tuple(arms),
        command=STANDIN,
        boot_timeout_s=60,
        max_new_tokens=12,
        prompts=((1, 2, 3), (40, 50, 60, 70)),
        workdir=str(tmp_path / "w"),
    )
    return LiveConfig(**{**base, **kw})


def by_name(result):
    return {a.name: a for a in result.arms}


def test_exact_reproduces_broken_corrupts_and_a_missing_bundle_refuses_to_boot(tmp_path):
    result = run_live(config(tmp_path, [NULL, EXACT, BROKEN, MISSING]))
    assert result.status is Status.PASS, result.reason
    arms = by_name(result)
    assert arms["null"].output_ids == arms["exact"].output_ids != arms["broken"].output_ids
    assert len(arms["null"].output_ids) == 2 and len(arms["null"].output_ids[0]) == 12
    assert arms["null"].routed[SILU] == 0 and arms["null"].stock[SILU] == 24
    assert arms["exact"].routed[SILU] == 24 and arms["broken"].routed[SILU] == 24
    assert arms["exact"].reported == (load_bundle(FIXTURES / "silu_exact").identity,) and arms["null"].reported == (
        None,
    )
    assert arms["missing"].returncode != 0 and "hotfloat seams: FATAL" in arms["missing"].reason
    assert (tmp_path / "w" / "broken" / "engine.log").exists() and (tmp_path / "w" / "exact" / "spec.json").exists()


def test_an_unwired_seam_fails(tmp_path, monkeypatch):
    monkeypatch.setenv("STANDIN_BYPASS_SEAM", "1")
    result = run_live(config(tmp_path, [NULL, BROKEN], parallel=1, workdir=None))  # judged in a temporary directory
    arms = by_name(result)
    assert result.status is Status.FAIL
    assert "no stock calls counted" in arms["null"].reason and "the seam did not run" in arms["broken"].reason


def test_an_engine_that_boots_despite_a_broken_prerequisite_fails(tmp_path):
    booted = ArmSpec("should-refuse", str(FIXTURES / "silu_exact"), Expect.BOOT_FAILS)
    result = run_live(config(tmp_path, [NULL, booted]))
    assert result.status is Status.FAIL and "booted and served" in by_name(result)["should-refuse"].reason


def test_a_hung_boot_is_killed_with_its_process_group_at_the_timeout(tmp_path):
    hang = (sys.executable, str(HERE / "standin_hang.py"), "{spec}")
    result = run_live(config(tmp_path, [NULL], boot_timeout_s=10, command=hang))
    null = by_name(result)["null"]
    assert result.status is Status.FAIL and "no result within" in null.reason and null.returncode < 0
    for pid in map(int, (tmp_path / "w" / "null" / "hang.pids").read_text().split()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_missing_prerequisites_fail_loudly(tmp_path):
    with pytest.raises(InfrastructureError, match="model path"):
        run_live(config(tmp_path, [NULL, EXACT], model_path=str(tmp_path / "absent")))
    with pytest.raises(InfrastructureError, match="exactly one null-armed reference"):
        run_live(config(tmp_path, [EXACT, BROKEN]))
    with pytest.raises(InfrastructureError, match="does not exist"):
        run_live(config(tmp_path, [NULL], command=None, engine_python=str(tmp_path / "python")))
    with pytest.raises(BundleError):
        run_live(config(tmp_path, [NULL, ArmSpec("bad", str(tmp_path), Expect.DIFFER)]))
