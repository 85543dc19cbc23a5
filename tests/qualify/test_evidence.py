"""Evidence: round trip, recompute from the evidence alone, tampering detected, hostile files refused."""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from hotfloat.errors import InputError
from hotfloat.qualify import load_evidence, recompute, save_evidence
from hotfloat.qualify.calibration import Uncalibrated
from hotfloat.qualify.evidence import Evidence
from hotfloat.qualify.records import Decision, EngineSpec, RuleConfig, RunFrame
from hotfloat.qualify.workload import make_workload


def synthetic(scales=(1.0, 0.9, 1.0), logprob=-1.0, rounds=4):
    rng = np.random.default_rng(0)
    jitter = 1 + 0.001 * rng.standard_normal((3, rounds))
    frames = [
        RunFrame(
            index=i,
            role="BCB"[i],
            ok=True,
            pass_s=(s * jitter[i]).tolist(),
            latency_s=[[s] * 8] * rounds,
            tokens=[[[1, 2]] * 8] * rounds,
            logprobs=[[[-1.0, logprob if i == 1 else -1.0]] * 8] * rounds,
            margins=[[[0.5, 0.5]] * 8] * rounds,
            routed={"activation.silu_and_mul": 4} if i == 1 else {},
        )
        for i, s in enumerate(scales)
    ]
    rule = RuleConfig(look_rounds=4, max_looks=1, process_floor=0.001)
    from hotfloat.qualify.decision import judge

    return Evidence(
        bundle_identity="0" * 64,
        engine=EngineSpec(preset="tiny", dtype="fp32", device="cpu"),
        engine_identity="e" * 64,
        workload=make_workload("tiny", 512, seed=5),
        rule=rule,
        sandboxed=True,
        order=[[0, 1, 2]] * rounds,
        frames=frames,
        decision=judge(frames, rule, [[0, 1, 2]] * rounds),
        calibration=Uncalibrated(why="the CPU rule, never calibrated"),
        started="2026-01-01T00:00:00+00:00",
        seconds=1.0,
    )


def test_round_trip_and_recompute(tmp_path):
    ev = synthetic()
    assert ev.decision.status == "PASS"
    save_evidence(ev, tmp_path / "e.json")
    back = load_evidence(tmp_path / "e.json")
    assert back == ev and recompute(back) == ev.decision


class Out:
    def __init__(self, code, out, err):
        self.returncode, self.stdout, self.stderr = code, out, err


@pytest.fixture
def cli(capsys):
    """Runs `hotfloat qualify ...` through the real entry point (main), which owns error lines and exit codes."""
    from hotfloat.cli.main import main

    def run(*args):
        with pytest.raises(SystemExit) as e:
            main(["qualify", *args])
        captured = capsys.readouterr()
        return Out(e.value.code, captured.out, captured.err)

    return run


def test_cli_recompute_matches_and_detects_tampering(tmp_path, cli):
    ev = synthetic()
    good = tmp_path / "good.json"
    save_evidence(ev, good)
    p = cli("recompute", str(good), "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["matches"] is True
    data = json.loads(good.read_text())
    data["decision"]["score"] = 0.5
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    p = cli("recompute", str(bad))
    assert p.returncode == 2 and p.stderr.startswith("error: ") and "differs" in p.stderr


@pytest.mark.parametrize("content", ["not json", "[]", '{"format": "other"}'])
def test_hostile_evidence_is_one_error_line(tmp_path, content, cli):
    f = tmp_path / "e.json"
    f.write_text(content)
    p = cli("recompute", str(f))
    assert (
        p.returncode == 2
        and p.stderr.count("\n") == 1
        and p.stderr.startswith("error: ")
        and "Traceback" not in p.stderr
    )


@pytest.mark.parametrize(
    "pass_s,why", [(float("nan"), "positive, finite"), (float("inf"), "positive, finite"), (1e308, "beyond any float")]
)
def test_evidence_with_impossible_pass_times_is_one_error_line(tmp_path, cli, pass_s, why):
    data = json.loads(synthetic().model_dump_json())
    data["frames"][2]["pass_s"] = [pass_s] * 4
    f = tmp_path / "e.json"
    f.write_text(json.dumps(data))
    p = cli("recompute", str(f))
    assert p.returncode == 2 and p.stderr.startswith("error: ") and p.stderr.count("\n") == 1 and why in p.stderr, (
        p.stderr
    )


def test_evidence_that_is_a_fifo_or_a_device_is_refused_without_blocking(tmp_path, cli):
    fifo = tmp_path / "e.json"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero"):
        p = cli("recompute", str(path))
        assert (
            p.returncode == 2 and p.stderr == f"error: {path}: not valid qualification evidence: not a regular file\n"
        )


def test_evidence_written_where_it_cannot_be_is_one_error_line(tmp_path):
    with pytest.raises(InputError, match="cannot write evidence"):
        save_evidence(synthetic(), tmp_path / "missing" / "e.json")


def test_reordered_frames_are_refused():
    ev = synthetic()
    shuffled = ev.model_copy(update={"frames": [ev.frames[1], ev.frames[0], ev.frames[2]]})
    with pytest.raises(InputError):
        recompute(shuffled)


def test_incomplete_evidence_is_refused():
    ev = synthetic()
    short = [
        f.model_copy(update={k: getattr(f, k)[:3] for k in ("pass_s", "latency_s", "tokens", "logprobs", "margins")})
        for f in ev.frames
    ]
    with pytest.raises(InputError, match="before the protocol reached a decision"):
        recompute(ev.model_copy(update={"frames": short, "decision": Decision(status="PASS", reason="")}))


def test_evidence_with_nan_logprobs_round_trips_and_recomputes_to_fail(tmp_path):
    """A candidate's NaN logprobs are evidence of its FAIL: they must be written, read back and recomputed."""
    ev = synthetic(logprob=float("nan"))
    assert ev.decision.status == "FAIL" and "non-finite" in ev.decision.reason
    save_evidence(ev, tmp_path / "nan.json")
    assert "NaN" in (tmp_path / "nan.json").read_text()
    back = load_evidence(tmp_path / "nan.json")
    assert np.isnan(back.frames[1].logprobs[0][0][1]) and recompute(back) == ev.decision


def test_a_round_order_that_is_not_the_three_engines_is_refused(tmp_path):
    bad = json.loads(synthetic().model_dump_json())
    bad["order"][1] = [0, 5, 2]
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError, match="order.1: .*frame indices 0, 1, 2"):
        load_evidence(path)


DEVICE_RUNS_DIR = Path(__file__).resolve().parents[2] / "docs" / "qualify-runs"
DEVICE_RUNS = sorted(DEVICE_RUNS_DIR.glob("evidence-*.json*"))


@pytest.mark.parametrize("path", DEVICE_RUNS, ids=[p.name for p in DEVICE_RUNS])
def test_every_committed_device_evidence_recomputes_to_its_decision(path):
    """Each verdict the docs quote from a GPU (plain or xz, as committed) follows from its evidence alone."""
    ev = load_evidence(path)
    assert ev.frames and recompute(ev) == ev.decision


def test_evidence_v5_names_its_calibration_and_earlier_formats_none(tmp_path):
    """The format says whether the calibration is there: v5 or v6 evidence without one, or v4 evidence claiming one,
    is refused in one line; so is evidence from before the recheck that says a call rewrote its inputs."""
    data = json.loads(synthetic().model_dump_json())
    assert data["format"] == "hotfloat-qualify-evidence-v6" and data["calibration"]["kind"] == "none"
    for fmt, calibration in (
        ("hotfloat-qualify-evidence-v6", None),
        ("hotfloat-qualify-evidence-v5", None),
        ("hotfloat-qualify-evidence-v4", {"kind": "none", "why": "x"}),
    ):
        path = tmp_path / "ev.json"
        path.write_text(json.dumps({**data, "format": fmt, "calibration": calibration}))
        with pytest.raises(InputError, match="evidence v5 and later, and only they, name the calibration") as e:
            load_evidence(path)
        assert "\n" not in str(e.value)
    v5 = json.loads(
        load_evidence(
            DEVICE_RUNS_DIR / "evidence-h100-llama8b-attention_prefill_triton-audit-v5.json.xz"
        ).model_dump_json()
    )
    v5["audit"][1]["calls"][0]["inputs_changed"] = True
    path.write_text(json.dumps(v5))
    with pytest.raises(InputError, match="v5 evidence was not rechecked"):
        load_evidence(path)
