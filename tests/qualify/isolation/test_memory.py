"""GPU memory owned like GPU time (hotfloat.qualify.isolation.memory): the plan on the devices validators own, the
ledger's charging order, and whole CPU qualifications under a stand-in driver
(tests/qualify/isolation/standin_watchdog.py) whose device memory is each process's resident memory, so a candidate that
hoards really hoards.

Whoever holds more than its share is at fault: a hoarding candidate FAILs with the fault named, never a free
re-roll; a baseline that runs out of memory while the candidate keeps within its share stays NO_DECISION; and a
baseline's failure while the candidate is over its share is the candidate's."""

import json
import sys
from pathlib import Path

import pytest

from hotfloat.errors import InfrastructureError
from hotfloat.qualify import QualifyOptions, qualify_bundle, recompute
from hotfloat.qualify.isolation import Isolation
from hotfloat.qualify.isolation.client import Watchdog
from hotfloat.qualify.isolation.memory import GiB, Ledger, need_bytes, plan
from hotfloat.qualify.isolation.resident import EngineFault, ResidentEngine
from hotfloat.qualify.workload import kv_cap, make_workload

pytestmark = pytest.mark.timed  # a 6 s stall floor
H100, H200 = 81559 << 20, 143771 << 20
"""The devices' memory as nvidia-smi reports it (docs/device-runs.md)."""
STANDIN = [sys.executable, str(Path(__file__).with_name("standin_watchdog.py"))]
OPTS = QualifyOptions.for_device(
    "cpu", seed=5, warmup_passes=0, stall_floor_s=6.0, rule={"look_rounds": 3, "max_looks": 1}
)
HOARD = """
import torch

calls = [0]
kept = []


def run(x, out):
    calls[0] += 1
    if calls[0] == {after}:
        kept.append(bytearray(1200 << 20))  # touched by zero-filling: resident
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""


def test_an_8b_engine_needs_its_weights_kv_and_overhead():
    w = make_workload("sglang", 32000, seed=1)
    need = need_bytes("sglang", "llama-8b", "bf16", kv_cap(w), None)
    weights = 7_241_732_096 * 2  # llama-8b with a 32k vocabulary, untied: 7.24 B parameters
    kv = 32 * 2 * 8 * 128 * 2 * kv_cap(w)
    assert need == weights + kv + 6 * GiB and 21 * GiB < need < 22 * GiB


def test_the_h100_holds_three_engines_with_the_twin_apart_from_the_candidate_and_the_h200_four():
    need = 22 * GiB
    h100 = plan("NVIDIA H100 80GB HBM3", H100, 600 << 20, need, wanted=4, least=3)
    assert h100.resident == 3 and h100.twin_apart and h100.share_bytes > need
    assert 3 * h100.share_bytes + h100.in_use_bytes + h100.headroom_bytes <= H100
    h200 = plan("NVIDIA H200", H200, 600 << 20, need, wanted=4, least=3)
    assert h200.resident == 4 and not h200.twin_apart and h200.share_bytes > 33 * GiB
    assert plan("NVIDIA H200", H200, 600 << 20, need, wanted=6, least=6).share_bytes > need
    with pytest.raises(InfrastructureError, match=r"holds 3 engine\(s\) of 22.0 GiB; this run needs 6"):
        plan("NVIDIA H100 80GB HBM3", H100, 600 << 20, need, wanted=6, least=6)


def test_the_ledger_charges_the_untrusted_engine_first_and_keeps_peaks():
    ledger = Ledger(plan("dev", 16 * GiB, 0, 4 * GiB, wanted=3, least=3), trusted=frozenset({"0B", "2B"}))
    ledger.check({"0B": GiB, "1C": 2 * GiB, "2B": GiB}, "at ready", ready={"0B", "1C", "2B"})
    with pytest.raises(EngineFault, match="engine 1C held 9.0 GiB") as e:
        ledger.check({"0B": 9 * GiB, "1C": 9 * GiB, "2B": GiB}, "after 0B's pass")
    assert e.value.kind == "memory" and e.value.who == "1C"
    assert ledger.over({"0B": 9 * GiB, "1C": 9 * GiB}) == ["1C", "0B"]
    rec = ledger.record()
    assert rec.engines["1C"].ready_bytes == 2 * GiB and rec.engines["1C"].peak_bytes == 9 * GiB and rec.readings == 2


EXACT_SILU = """
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""
MANIFEST_TWO = """bundle_id = "{bundle_id}"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"

[[ops]]
slot = "attention.decode"
source = "kernels/k.py"
entry = "attend"
dtypes = ["bf16"]
"""


@pytest.fixture
def device(tmp_path, monkeypatch):
    """Every CPU qualification in the test runs under the stand-in driver, on a device of `total` bytes."""

    def make(total: int) -> Path:
        state = tmp_path / "state.json"
        state.write_text(json.dumps({"contexts": "everyone", "device": {"name": "Stand-in", "total": total}}))
        monkeypatch.setattr(
            Isolation,
            "start",
            classmethod(lambda cls, d, required: cls.connect(Watchdog([*STANDIN, str(state)]), True)),
        )
        return state

    return make


def _qualify(bundle, opts=OPTS):
    r = qualify_bundle(bundle, opts)
    assert recompute(r.evidence) == r.evidence.decision
    return r


def test_a_candidate_that_hoards_memory_fails_with_the_fault_named(device, make_bundle):
    device(int(4.5 * GiB))
    r = _qualify(make_bundle(HOARD.format(after=30), name="hoarder"), OPTS.model_copy(update={"twin": False}))
    c, mem = r.evidence.frames[1], r.evidence.memory
    assert r.status == "FAIL" and r.evidence.decision.fault == "C:memory", r.reason
    assert "engine 1C held" in c.error and "over its share" in c.error
    assert mem.plan.resident == 3 and mem.engines["1C"].peak_bytes > mem.plan.share_bytes
    assert all(mem.engines[n].peak_bytes < mem.plan.share_bytes for n in ("0B", "2B"))
    assert r.evidence.isolation.mode.endswith("memory-shares")


def test_a_baseline_out_of_memory_with_the_candidate_within_its_share_stays_no_decision(device, bundles, monkeypatch):
    device(int(4.5 * GiB))
    serve, calls = ResidentEngine.serve, []

    def runs_out(self, *a, **k):
        calls.append(self.name)
        if self.name == "0B" and calls.count("0B") > 2:
            raise EngineFault("engine raised OutOfMemoryError: CUDA out of memory", kind="raised")
        return serve(self, *a, **k)

    monkeypatch.setattr(ResidentEngine, "serve", runs_out)
    r = _qualify(bundles["exact"], OPTS.model_copy(update={"twin": False}))
    assert r.status == "NO_DECISION" and r.evidence.decision.fault == "B:raised", r.reason
    assert r.evidence.frames[1].ok and "out of memory" in r.evidence.frames[0].error


def test_a_baseline_failing_while_the_candidate_is_over_its_share_is_the_candidates_fault(
    device, make_bundle, monkeypatch
):
    """C hoards while handing over its audit, where no pass is timed; B' then fails handing over its own: C pays."""
    device(int(4.5 * GiB))
    hoards_at_audit = HOARD.format(after=-1) + (
        "\nimport hotfloat.engine.transformers_engine as _engine\n_audit = _engine.TransformersEngine.audit\n\n\n"
        "def _hoarding(self):\n    kept.append(bytearray(1200 << 20))\n    return _audit(self)\n\n\n"
        "_engine.TransformersEngine.audit = _hoarding\n"
    )
    audit = ResidentEngine.audit

    def b2_fails(self, rnd, timeout_s):
        if self.name == "2B":
            raise EngineFault("engine raised OutOfMemoryError: CUDA out of memory", kind="raised")
        return audit(self, rnd, timeout_s)

    monkeypatch.setattr(ResidentEngine, "audit", b2_fails)
    r = _qualify(make_bundle(hoards_at_audit, name="audit_hoarder"), OPTS.model_copy(update={"twin": False}))
    assert r.status == "FAIL" and r.evidence.decision.fault == "C:memory", r.reason
    assert "when engine 2B failed" in r.evidence.frames[1].error


def test_on_a_device_too_small_for_four_the_twin_serves_and_leaves_before_the_candidate_boots(device, bundles):
    device(int(4.5 * GiB))
    said: list[str] = []
    r = qualify_bundle(bundles["exact"], OPTS, progress=lambda d, i, n: said.append(d))
    mem, twin = r.evidence.memory, r.evidence.twin
    assert mem.plan.resident == 3 and mem.plan.twin_apart
    steps = [
        said.index(s)
        for s in (
            "booting 0B, 2B, 3T",
            "twin 3T serves with no slot nudged",
            "twin 3T serves with activation.silu_and_mul nudged",
            "booting 1C",
        )
    ]
    assert steps == sorted(steps), said
    assert twin.ok and len(twin.pass_s) == OPTS.rule.look_rounds and r.evidence.decision.gate == "PASS", r.reason
    assert set(mem.engines) == {"0B", "1C", "2B", "3T"}
    assert recompute(r.evidence) == r.evidence.decision


def test_with_more_declared_slots_than_the_twin_serves_first_it_boots_after_the_candidates_teardown(
    device, bundles, monkeypatch
):
    device(int(4.5 * GiB))
    monkeypatch.setattr("hotfloat.qualify.protocol.FIRST_MOST", 0)
    said: list[str] = []
    r = qualify_bundle(bundles["exact"], OPTS, progress=lambda d, i, n: said.append(d))
    assert said.index("booting 0B, 2B") < said.index("booting 1C") < said.index("booting 3T after 1C's teardown")
    twin = r.evidence.twin
    assert twin.ok and len(twin.pass_s) == OPTS.rule.look_rounds and r.evidence.decision.gate == "PASS", r.reason


def test_where_the_twin_boots_after_the_candidate_memory_the_candidate_never_gives_back_is_its_fault(
    device, bundles, monkeypatch
):
    """T boots into the memory B, C and B' leave: C's processes still charged memory once C ended FAILs C, before T
    boots into a device it could run short on (which would otherwise be T's NO_DECISION, a re-roll)."""
    from hotfloat.qualify.fleet import Fleet

    device(int(4.5 * GiB))
    monkeypatch.setattr("hotfloat.qualify.protocol.FIRST_MOST", 0)
    release = Fleet.release
    monkeypatch.setattr(Fleet, "release", lambda self, name, *a: name != "1C" and release(self, name, *a))
    said: list[str] = []
    r = qualify_bundle(bundles["exact"], OPTS, progress=lambda d, i, n: said.append(d))
    assert r.status == "FAIL" and r.evidence.decision.fault == "C:memory", r.reason
    assert "once it had ended" in r.evidence.frames[1].error
    assert not any(s.startswith("booting 3T") for s in said), said


def test_a_declared_slot_the_engine_never_calls_costs_the_twin_nothing_before_the_candidate(device, make_bundle):
    """A manifest may declare a slot no call reaches (to make every subset with it unservable by T): those subsets
    are kept as T's faults and charged only if C routed exactly one of them, which it cannot; the gate passes."""
    device(int(4.5 * GiB))
    kernel = EXACT_SILU + "\n\ndef attend(*args):\n    raise RuntimeError('never called on this engine')\n"
    manifest = MANIFEST_TWO.format(bundle_id="unreachable")
    said: list[str] = []
    r = qualify_bundle(make_bundle(kernel, manifest=manifest), OPTS, progress=lambda d, i, n: said.append(d))
    assert "twin 3T serves with activation.silu_and_mul, attention.decode nudged" in said, said
    twin = r.evidence.twin
    assert twin.ok and len(twin.pass_s) == OPTS.rule.look_rounds and r.evidence.decision.gate == "PASS", r.reason
