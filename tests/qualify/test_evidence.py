"""Evidence: round trip, recompute from the evidence alone, tampering detected, hostile files refused."""

import json

import numpy as np
import pytest

from hotfloat.errors import InputError
from hotfloat.qualify import load_evidence, recompute, save_evidence
from hotfloat.qualify.records import Decision, EngineSpec, Evidence, RuleConfig, RunFrame
from hotfloat.qualify.workload import make_workload


def synthetic(scales=(1.0, 0.9, 1.0)):
    rng = np.random.default_rng(0)
    base = rng.uniform(0.1, 1.0, 8)
    frames = [RunFrame(index=i, role="BC"[i % 2], ok=True, latency_s=[(base * s).tolist()], tokens=[[[1, 2]] * 8],
                       logprobs=[[[-1.0, -1.0]] * 8], margins=[[[0.5, 0.5]] * 8],
                       routed={"activation.silu_and_mul": 4} if i % 2 else {}) for i, s in enumerate(scales)]
    rule = RuleConfig(bootstrap=200)
    from hotfloat.qualify.decision import judge

    return Evidence(bundle_identity="0" * 64, engine=EngineSpec(preset="tiny", dtype="fp32", device="cpu"),
                    engine_identity="e" * 64, workload=make_workload("tiny", 512, seed=5), rule=rule, sandboxed=True,
                    frames=frames, decision=judge(frames, rule), started="2026-01-01T00:00:00+00:00", seconds=1.0)


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
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and p.stderr.startswith("error: ") and "Traceback" not in p.stderr


def test_reordered_frames_are_refused():
    ev = synthetic()
    shuffled = ev.model_copy(update={"frames": [ev.frames[1], ev.frames[0], ev.frames[2]]})
    with pytest.raises(InputError):
        recompute(shuffled)


def test_incomplete_evidence_is_refused():
    ev = synthetic()
    with pytest.raises(InputError):
        recompute(ev.model_copy(update={"frames": ev.frames[:2], "decision": Decision(status="PASS", reason="")}))
