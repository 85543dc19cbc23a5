"""Isolation around timed passes, on two real CPU engines: with the real watchdog (no GPU here: CUDA qualification
is refused unless opted out), and with a stand-in watchdog whose driver behaves as the H200's was measured to
(tests/qualify/isolation/standin_watchdog.py), so the validator's handling of every lock outcome runs for real."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from hotfloat.errors import InfrastructureError
from hotfloat.engine import hostload
from hotfloat.qualify import QualifyOptions
from hotfloat.qualify.isolation import Isolation
from hotfloat.qualify.isolation.memory import Ledger, plan
from hotfloat.qualify.isolation.resident import EngineFault, ResidentEngine
from hotfloat.qualify.isolation.client import CLOSE_S, Watchdog

OPTS = QualifyOptions.for_device("cpu", seed=3, warmup_passes=0)
STANDIN = [sys.executable, str(Path(__file__).with_name("standin_watchdog.py"))]


def test_cpu_engines_are_isolated_by_stopping_them_and_the_record_says_so():
    iso = Isolation.start("cpu", required=True)
    assert iso.mode == "sigstop" and "CPU" in iso.record().why_not["checkpoint"]


def test_a_cuda_host_without_the_checkpoint_lock_is_refused_unless_the_caller_opts_out():
    with pytest.raises(InfrastructureError, match="GPU isolation unavailable.*no CUDA driver"):
        Isolation.start("cuda", required=True)
    iso = Isolation.start("cuda", required=False)
    try:
        assert iso.mode == "sigstop" and "no CUDA driver" in iso.record().why_not["checkpoint"]
    finally:
        iso.close()


@pytest.fixture(scope="module")
def engines():
    base = dict(
        OPTS.engine().model_dump(),
        bundle=None,
        identity=None,
        warmup=[],
        threads=1,
        extra_passes=0,
        cpus=None,
        graph_batches=[2],
        kv_tokens=0,
        mem_fraction=0.2,
    )
    pair = [ResidentEngine(n, base, device="cpu", kind="transformers", sandboxed=True, model_dir=None) for n in "BC"]
    try:
        for e in pair:
            e.ready(time.monotonic() + 300)
        yield pair
    finally:
        for e in pair:
            e.close()


@pytest.fixture
def standin(tmp_path):
    state = tmp_path / "state.json"
    made = []

    def make(**s) -> tuple[Isolation, Path]:
        state.write_text(json.dumps(s))
        iso = Isolation.connect(Watchdog([*STANDIN, str(state)]), required=True)
        made.append(iso)
        return iso, state

    yield make
    for iso in made:
        iso.close()


def _log(state: Path) -> list:
    p = Path(str(state) + ".log")
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def _serve(e):
    e.serve([[1, 2, 3], [4, 5]], [2, 2], 120)


def test_idle_engines_are_locked_then_stopped_and_continued_then_unlocked(engines, standin):
    b, c = engines
    worker, served = c.pids()[-1], b.pids()[-1]
    iso, state = standin(contexts=[worker, served])
    assert iso.mode == "sigstop+checkpoint-lock+quiet-probe+nvml-witness"
    with iso.alone(engines, b):
        assert hostload.state(worker) == "T"
        _serve(b)
    assert hostload.state(worker) != "T"
    log = _log(state)
    assert log[0] == ["lock", worker] and log[-1] == ["unlock", worker]
    assert log[1:3] == [["lock", served], ["unlock", served]]  # the timed engine is drained, not kept locked
    r = iso.record()
    assert r.passes == 1 and r.cost_ms_median > 0 and r.lock_ms_median >= 0


def test_gpu_work_left_running_is_the_fault_of_the_engine_that_left_it(engines, standin):
    b, c = engines
    iso, _ = standin(contexts=c.pids(), busy=[c.pids()[-1]])
    with pytest.raises(EngineFault, match="still had GPU work running") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "isolation" and e.value.who == c.name


def test_a_process_holding_a_context_must_lock(engines, standin):
    b, c = engines
    iso, _ = standin(contexts=c.pids(), refuse=[c.pids()[-1]])
    with pytest.raises(EngineFault, match="holds a GPU context but could not be locked") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.who == c.name


def test_nvml_seeing_a_stopped_engine_use_the_gpu_is_its_fault_and_a_foreign_process_the_hosts(engines, standin):
    b, c = engines
    later = int(time.time() * 1e6) + 10_000_000
    iso, _ = standin(contexts=[], util=[{"pid": c.pids()[-1], "ts": later, "sm": 100}])
    with pytest.raises(EngineFault, match="used the GPU .* while stopped") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "isolation" and e.value.who == c.name
    iso, _ = standin(contexts=[], util=[{"pid": 1, "ts": later, "sm": 40}])
    with pytest.raises(EngineFault, match="outside every engine") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "host"


def test_a_gpu_that_is_not_quiet_is_charged_to_whoever_holds_it(engines, standin):
    """With every engine drained and locked, a gap names its holder: a live process outside every engine (pid 1
    here) makes the host unfit; with every live context locked it came from a process that has exited since, which
    only the served engine could have run; a stopped engine's process that holds a context nobody locked is that
    engine's."""
    b, c = engines
    iso, _ = standin(contexts=[1], gap_us=2500.0)
    with pytest.raises(EngineFault, match="not quiet before") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "host" and "process 1 outside every engine" in str(e.value)
    assert iso.record().probe_gap_us_max == 2500.0
    iso, _ = standin(contexts=[], gap_us=2500.0)
    with pytest.raises(EngineFault, match="a process that has exited since held it") as e:
        with iso.alone(engines, c):
            _serve(c)
    assert e.value.kind == "isolation" and e.value.who == c.name


def test_an_exited_process_seen_by_nvml_during_the_pass_is_the_served_engines_own_work(engines, standin):
    b, _ = engines
    later = int(time.time() * 1e6) + 10_000_000
    iso, _ = standin(contexts=[], util=[{"pid": (1 << 22) + 7, "ts": later, "sm": 90}])  # no such process
    with iso.alone(engines, b):
        _serve(b)
    assert iso.record().witness_samples == 1


def test_an_engine_that_cannot_be_unlocked_is_at_fault(engines, standin):
    b, c = engines
    iso, _ = standin(contexts=c.pids(), stuck=[c.pids()[-1]])
    with pytest.raises(EngineFault, match="could not be unlocked") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "isolation" and e.value.who == c.name


@pytest.mark.parametrize("op", ["contexts", "probe", "util", "memory"])
def test_a_watchdog_that_does_not_answer_is_a_fault_with_an_owner(engines, standin, monkeypatch, op):
    from hotfloat.qualify.isolation import client

    b, c = engines
    monkeypatch.setattr(client, "REPLY_S", 5.0)  # short, yet long enough for every other reply on a loaded host
    iso, state = standin(contexts=c.pids())
    state.write_text(json.dumps({"contexts": c.pids(), "hang": [op]}))
    iso.hold(Ledger(plan("Stand-in", 64 << 30, 0, 1 << 30, wanted=3, least=3)))
    with pytest.raises(EngineFault, match=f"watchdog's {op} did not answer") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "isolation" and e.value.who in (b.name, c.name)
    assert iso.wd.ask("hello")["checkpoint"], "the hung watchdog was replaced"


def test_an_engine_over_its_memory_share_is_at_fault_before_the_pass(engines, standin):
    b, c = engines
    iso, _ = standin(contexts=[*b.pids(), *c.pids()], memory={str(c.pids()[-1]): 9 << 30})
    iso.hold(Ledger(plan("Stand-in", 24 << 30, 0, 2 << 30, wanted=3, least=3), trusted=frozenset({b.name})))
    assert iso.mode.endswith("+memory-shares")
    with pytest.raises(
        EngineFault, match=r"engine C held 9\.\d GiB of GPU memory before B's pass, over its share"
    ) as e:
        with iso.alone(engines, b):
            pytest.fail("the pass must not start")
    assert e.value.kind == "memory" and e.value.who == c.name
    assert iso.ledger.record().engines["C"].peak_bytes > 9 << 30  # summed over its tree: the launcher too


def test_an_engine_that_stopped_itself_is_at_fault_before_any_lock_can_hang_on_it(engines, standin):
    import os
    import signal

    b, c = engines
    iso, state = standin(contexts=c.pids())
    worker = c.pids()[-1]
    os.kill(worker, signal.SIGSTOP)
    try:
        _wait_stopped(worker)  # a signal is delivered asynchronously: the engine has stopped itself only once it shows
        with pytest.raises(EngineFault, match="stopped before the validator stopped it") as e:
            with iso.alone(engines, b):
                _serve(b)
        assert e.value.who == c.name and _log(state) == []
    finally:
        os.kill(worker, signal.SIGCONT)


def test_a_context_made_between_the_look_and_the_stop_is_its_engines_fault(engines, standin, tmp_path):
    """The stand-in lists C's worker as a context holder only after the locks were taken (as a process that made its
    first context in that window would be): the check after the stop names C."""
    b, c = engines
    iso, state = standin(contexts=[])
    real = iso._lock

    def lock_then_grow(e, pids):
        got = real(e, pids)
        state.write_text(json.dumps({"contexts": [c.pids()[-1]]}))
        return got

    iso._lock = lock_then_grow
    with pytest.raises(EngineFault, match="made a GPU context while the validator was locking it") as e:
        with iso.alone(engines, b):
            _serve(b)
    assert e.value.kind == "isolation" and e.value.who == c.name


def _wait_stopped(pid: int, timeout_s: float = 10.0) -> None:
    """Until /proc shows `pid` stopped (state T), as the isolation reads it."""
    import time

    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rpartition(")")[2].split()[0] in ("T", "t"):
                return
        time.sleep(0.005)
    raise AssertionError(f"pid {pid} did not stop within {timeout_s} s")


def test_a_memory_reading_the_host_cannot_give_is_the_hosts_and_never_the_candidates(engines, standin):
    """After a baseline's fault the validator asks whether C is over its share: a watchdog that answers with an error
    there is the host's, so C is not charged (a hung reply is another matter: test_a_watchdog_that_does_not_answer)."""
    b, c = engines
    iso, _ = standin(contexts=[*b.pids(), *c.pids()], fail=["memory"])
    iso.hold(Ledger(plan("Stand-in", 24 << 30, 0, 2 << 30, wanted=3, least=3), trusted=frozenset({b.name})))
    assert iso.over_share(engines, owner=c.name) == []
    with pytest.raises(EngineFault, match="host: watchdog memory") as e:
        iso.check_memory({c.name: c.pids()}, "at ready", owner=c.name)
    assert e.value.kind == "host"


def test_a_host_whose_nvml_reports_another_pid_namespace_refuses_to_qualify(tmp_path):
    """In a pod without the host's pid namespace NVML reports the node's pids: no engine could be locked or charged
    its memory, and the evidence would claim protections that did not run. Refused in one line before any boot."""
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"contexts": "everyone", "pid_offset": 1 << 20}))
    with pytest.raises(InfrastructureError) as got:
        Isolation.connect(Watchdog([*STANDIN, str(state)]), required=False)
    assert "speaks the node's pids" in str(got.value) and "HOTFLOAT_HOST_PROC" in str(got.value)
    assert "\n" not in str(got.value)
    state.write_text(json.dumps({"contexts": "everyone"}))
    Isolation.connect(Watchdog([*STANDIN, str(state)]), required=True).close()


FREEZER = Path("/sys/fs/cgroup/freezer")


@pytest.mark.skipif(
    not (FREEZER.is_dir() and os.access(FREEZER, os.W_OK)),
    reason="needs the cgroup v1 freezer (root): the one way to hold a process that SIGKILL cannot end at once",
)
def test_closing_a_watchdog_that_cannot_die_yet_is_bounded(tmp_path):
    """A watchdog stuck in a driver call does not die until the call returns; a frozen process is the same to the
    kernel. close() must return anyway (today's wait() would hang the validator)."""
    wd = Watchdog([sys.executable, "-c", "import time; time.sleep(600)"])
    group = FREEZER / f"hotfloat-test-{os.getpid()}"
    group.mkdir()
    try:
        (group / "cgroup.procs").write_text(str(wd.proc.pid))
        (group / "freezer.state").write_text("FROZEN")
        t = time.monotonic()
        wd.close()
        assert time.monotonic() - t < CLOSE_S + 3 and wd.proc.poll() is None  # not dead yet, and not waited for
    finally:
        (group / "freezer.state").write_text("THAWED")
        wd.proc.wait(timeout=30)
        group.rmdir()
