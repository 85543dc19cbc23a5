"""Multi-rank verification on CPU with gloo, world sizes 2 and 4: the correct example passes on every rank, the
one-rank-wrong example fails naming that rank, the deadlocking example is killed at its timeout as a hang."""

import json
import subprocess
import sys

import pytest

from hotfloat.bundle import load_bundle
from hotfloat.collective import verify_collective
from hotfloat.verdict import Status

from ..conftest import EXAMPLES


def _verify(example, world, **kw):
    return verify_collective(load_bundle(EXAMPLES / example), world_size=world, dtypes=["bf16"], seed=11, **kw)


@pytest.mark.parametrize("world", [2, 4])
def test_correct_all_reduce_passes_on_every_rank(world):
    report = _verify("allreduce_torch", world)
    assert report.status is Status.PASS, report.reasons
    assert report.backend == "gloo" and report.world_size == world
    shapes = [r.shape for r in report.rows]
    assert shapes == ["T=333,H=1536", "T=128,H=2880", "T=8,H=4096", "T=1,H=4096", "T=8,H=4096", "T=128,H=2880",
                      "T=333,H=1536"]
    assert all(r.status is Status.PASS for r in report.rows)


@pytest.mark.parametrize("world", [2, 4])
def test_one_wrong_rank_fails_the_run(world):
    report = _verify("allreduce_broken_rank", world)
    assert report.status is Status.FAIL
    assert "rank 1: max error" in report.reasons[0]


@pytest.mark.parametrize("world", [2, 4])
def test_deadlock_is_killed_and_reported(world):
    report = _verify("allreduce_deadlock", world, timeout_s=3)
    assert report.status is Status.FAIL
    assert "aborted: hang: killed 3s after all ranks were ready" in report.reasons[0]
    assert not report.rows


def test_cli_world_size_dispatches_to_the_collective_verifier():
    cmd = [sys.executable, "-m", "hotfloat.cli", "verify", str(EXAMPLES / "allreduce_torch"), "--world-size", "2",
           "--dtype", "fp32", "--seed", "3", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["status"] == "PASS" and report["world_size"] == 2 and len(report["rows"]) == 7
