"""Real qualifications on the tiny CPU engine: fresh engine processes, the gate, the rule and the evidence.

On a shared 2-core CPU the timing noise is far above the noise floor, so an exact bundle ends NO_DECISION (drift)
or FAIL on speed, never PASS; what must hold exactly is the gate: exact bundles match, broken ones FAIL.
"""

from pathlib import Path

import pytest

from hotfloat.qualify import QualifyOptions, qualify_bundle, recompute

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
OPTS = QualifyOptions(seed=11, passes=1, rule=QualifyOptions().rule.model_copy(update={"max_pairs": 2}))


def test_exact_bundle_passes_the_gate_and_is_not_crowned_on_cpu(bundles):
    r = qualify_bundle(bundles["exact"], OPTS)
    ev = r.evidence
    assert ev.decision.gate == "PASS" and r.status in ("NO_DECISION", "FAIL"), r.reason
    assert [f.role for f in ev.frames][:3] == ["B", "C", "B"]
    assert all(f.ok for f in ev.frames)
    assert all(sum(f.routed.values()) > 0 for f in ev.frames if f.role == "C")
    assert all(sum(f.routed.values()) == 0 for f in ev.frames if f.role == "B")
    assert recompute(ev) == ev.decision
    assert ev.workload.seed == 11 and ev.env and ev.engine_identity != "unknown"


def test_broken_bundle_fails_the_gate_with_score_zero(bundles):
    r = qualify_bundle(bundles["broken"], OPTS)
    assert r.status == "FAIL" and r.score == 0 and r.evidence.decision.gate == "FAIL"
    assert "does not match the baseline" in r.reason


def test_bundle_that_raises_in_the_engine_fails(bundles):
    r = qualify_bundle(bundles["raises"], OPTS)
    assert r.status == "FAIL" and "ZeroDivisionError" in r.reason


def test_bundle_outside_its_domain_is_not_applicable(bundles):
    r = qualify_bundle(bundles["gpu_only"], OPTS)
    assert r.status == "N/A" and "domain" in r.reason


EXACT_EXAMPLES = [n for n in ("silu_torch", "silu_triton", "rmsnorm_triton") if (EXAMPLES / n).is_dir()]
BROKEN_EXAMPLES = [n for n in ("silu_broken", "rmsnorm_broken") if (EXAMPLES / n).is_dir()]


@pytest.mark.parametrize("name", EXACT_EXAMPLES)
def test_exact_examples_are_correct_and_not_crowned_on_cpu(name):
    r = qualify_bundle(EXAMPLES / name, OPTS)
    assert r.evidence.decision.gate == "PASS" and r.status in ("NO_DECISION", "FAIL"), r.reason


@pytest.mark.parametrize("name", BROKEN_EXAMPLES)
def test_broken_examples_fail_correctness(name):
    r = qualify_bundle(EXAMPLES / name, OPTS)
    assert r.status == "FAIL" and r.evidence.decision.gate == "FAIL", r.reason


SPAWNS = """
import subprocess, sys, time, torch

def run(x, out):
    if not getattr(run, "started", False):
        run.started = True
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=False)
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def test_nothing_the_candidate_spawns_outlives_its_run(make_bundle):
    """The engine process group is killed after each run, so a leftover process cannot slow the next baseline."""
    import subprocess

    r = qualify_bundle(make_bundle(SPAWNS, name="spawner"), OPTS)
    assert r.evidence.decision.gate == "PASS"
    left = subprocess.run(["pgrep", "-f", "time.sleep\\(600\\)"], capture_output=True, text=True).stdout.split()
    assert left == [], f"candidate processes survived: {left}"
