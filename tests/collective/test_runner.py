"""Multi-rank verification on CPU with gloo, world sizes 2 and 4: the correct example passes on every rank, the
one-rank-wrong example fails naming that rank, the deadlocking example is killed at its timeout as a hang, and
scan gates first."""

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
    assert len(report.rows) == 13 and all(r.status is Status.PASS for r in report.rows)
    sizes = [int(r.shape.split(",")[0][2:]) * int(r.shape.split("H=")[1]) for r in report.rows]
    assert sizes == sorted(sizes[:7], reverse=True) + sorted(sizes[:7])[1:]


@pytest.mark.parametrize("world", [2, 4])
def test_one_wrong_rank_fails_the_run(world):
    report = _verify("allreduce_broken_rank", world)
    assert report.status is Status.FAIL
    assert "rank 1: out: " in report.reasons[0] and "elements outside atol" in report.reasons[0]


@pytest.mark.parametrize("world", [2, 4])
def test_deadlock_is_killed_and_reported(world):
    report = _verify("allreduce_deadlock", world, timeout_s=3)
    assert report.status is Status.FAIL
    assert (
        f"aborted: hang: ranks {list(range(world))} gave no answer to case 0 of 13, killed at the time limit"
        in report.reasons[0]
    )
    assert not report.rows


@pytest.mark.parametrize("world", [2, 4])
def test_fused_all_reduce_norm_example_passes_on_every_rank(world):
    """The Triton example (run by the interpreter in every rank) against the fp32 reference of all ranks' inputs."""
    report = _verify("ar_rmsnorm_triton", world, timeout_s=240)  # interpreted Triton in every rank on a shared CPU
    assert report.status is Status.PASS, report.reasons
    assert len(report.rows) == 13 and all(r.status is Status.PASS for r in report.rows)


AR_MANIFEST = (
    'bundle_id = "ar"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "collective.ar_residual_rmsnorm"\n'
    'source = "kernels/k.py"\nentry = "ar"\narchitectures = ["cpu"]\n'
)
AR_KERNEL = """\
import torch
import torch.distributed as dist


def ar(x, residual, weight, eps, out, residual_out, group):
    if CHECK_REPLICATED:
        for t in (residual, weight):
            total = t.to(torch.float32, copy=True)
            dist.all_reduce(total, group=group)
            if not torch.equal(total, t.float() * dist.get_world_size(group)):
                raise RuntimeError("a replicated input differs between ranks")
    s = x.to(torch.float32, copy=True)
    if REDUCE:
        dist.all_reduce(s, group=group)
    s += residual.float()
    residual_out.copy_(s)
    out.copy_(s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float())
"""


def test_replicated_inputs_are_the_same_on_every_rank(make_bundle):
    kernel = "CHECK_REPLICATED, REDUCE = True, True\n" + AR_KERNEL
    bundle = load_bundle(make_bundle(kernel, manifest=AR_MANIFEST))
    report = verify_collective(bundle, world_size=4, dtypes=["bf16"], seed=2)
    assert report.status is Status.PASS, report.reasons
    assert len(report.rows) == 13


def test_a_rank_local_norm_fails_on_the_first_case(make_bundle):
    """Skipping the reduction leaves the other ranks' partials out of both outputs."""
    kernel = "CHECK_REPLICATED, REDUCE = False, False\n" + AR_KERNEL
    report = verify_collective(load_bundle(make_bundle(kernel, manifest=AR_MANIFEST)), world_size=2, seed=2)
    assert report.status is Status.FAIL and len(report.rows) == 1
    assert "rank 0: out: " in report.reasons[0] and "elements outside atol" in report.reasons[0]


def test_scan_gates_before_any_rank_starts(make_bundle):
    source = "import torch\n\n\ndef all_reduce(x, out, group):\n    torch.distributed.os.system('true')\n"
    manifest = (
        'bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "collective.all_reduce"\n'
        'source = "kernels/k.py"\nentry = "all_reduce"\narchitectures = ["cpu"]\n'
    )
    report = verify_collective(load_bundle(make_bundle(source, manifest=manifest)), world_size=2, seed=1)
    assert report.status is Status.FAIL and not report.rows
    assert report.reasons[0].startswith("scan refused the bundle: kernels/k.py:5: torch.distributed.os")


def test_cli_world_size_dispatches_to_the_collective_verifier():
    cmd = [
        sys.executable,
        "-m",
        "hotfloat.cli",
        "verify",
        str(EXAMPLES / "allreduce_torch"),
        "--world-size",
        "2",
        "--dtype",
        "fp32",
        "--seed",
        "3",
        "--json",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["status"] == "PASS" and report["world_size"] == 2 and len(report["rows"]) == 13
    assert report["sandboxed"] is True  # the JSON says whether candidate code ran inside the sandbox
