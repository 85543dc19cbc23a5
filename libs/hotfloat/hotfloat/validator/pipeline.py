"""Moving submissions through the stages, one ledger transaction per change.

The stages are whatever implements `Stages` (over gRPC: `hotfloat_services.validator.clients`).

A qualification PASS counts only once reproduced: the score stage runs an independent qualification (the service
draws a fresh workload seed, on another endpoint where there is one) and `settle` decides (the one reproduction rule,
in `settle.py`): every run PASS -> SCORED at the lowest score, full or provisional by the combined bound of the
calibration records the runs were judged under; a correctness-gate FAIL -> FAILED; anything else -> NO_DECISION,
never a loss. While more runs could bring that bound under the policy's target, a passing reproduction is banked
(`runs.bank`) and the stage runs again. A scored submission's slot set is re-crowned in the transaction that records
SCORED. A validator stopped between runs resumes at the next: QUALIFIED and the banked runs hold the earlier ones.

Only a service's verdict moves a submission forward or fails it. Infrastructure faults (a dead worker, a missed
deadline, a malformed reply) are retried up to `max_attempts` per stage, counted across restarts, and then end
NO_DECISION: never FAILED, never lost. A try is recorded once its call holds an endpoint (`on_start`), so a call
waiting for a free or live endpoint costs no try, and the row names the endpoint it ran on. A service that refuses
the validator itself (wrong token, a stage it does not offer: `StageRefused`) stops the run with nothing judged:
that is a deployment fault, not a submission's.

A stop (SIGTERM) starts nothing new: calls in flight finish and are recorded, calls still waiting for an endpoint are
abandoned with nothing recorded, and every submission stays at its last committed state for the next run.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

from ..bundle import unpack
from ..compiler import BuildRecord
from ..errors import HotfloatError, InfrastructureError
from ..ledger import NEXT, Ledger, State, Submission
from ..verdict import Status
from .evidence import Qualified, Run, ScoreEvidence, StageEvidence
from .runs import add_run, bank, reproductions
from .settle import DEFAULT_SETTLEMENT, SettlementPolicy, settle
from .stages import OnStart, Outcome, StageRefused, Stages
from .standings import record_scored, slot_set

log = logging.getLogger("hotfloat.validator")
OnEvent = Callable[[int, str, str], None]
"""Called with (submission id, stage, message): decisions and retries to `on_event`, streamed progress to `on_progress`."""
FORWARD = {Status.PASS}
SKIPPABLE = {"build": {Status.PASS, Status.N_A}}
"""A build with nothing to build (python ops) moves forward too; every other stage needs PASS."""
UNDECIDED = {Status.NO_DECISION, Status.N_A}
"""N/A at admission means no op runs on this worker's device: the worker cannot judge, so it is not a FAIL."""


class Pipeline:
    """Drives ledger submissions through the stages up to `through`, with `workers` submissions at a time."""

    def __init__(
        self,
        ledger: Ledger,
        stages: Stages,
        *,
        through: State = State.ADMITTED,
        workers: int = 2,
        max_attempts: int = 3,
        backoff_s: float = 0.5,
        on_event: OnEvent | None = None,
        on_progress: OnEvent | None = None,
        on_stop: Callable[[], None] | None = None,
        settlement: SettlementPolicy = DEFAULT_SETTLEMENT,
    ):
        if through not in (State.SCANNED, State.BUILT, State.ADMITTED, State.QUALIFIED, State.SCORED):
            raise InfrastructureError(
                f"a run can go through scanned, built, admitted, qualified or scored, not {through.value}"
            )
        self.ledger, self.stages, self.through = ledger, stages, through
        self.workers, self.max_attempts, self.backoff_s = workers, max_attempts, backoff_s
        self.on_event = on_event or (lambda sid, stage, msg: log.info("#%d %s: %s", sid, stage, msg))
        self.on_progress = on_progress or (lambda sid, stage, msg: None)
        self.settlement = settlement
        self.on_stop = on_stop or (lambda: None)
        """Called when a run stops with calls in flight: the stages give up their waits for an endpoint (gRPC:
        `StageClients.abandon`), so a stop never waits for a dead endpoint to come back."""
        self._stop, self._ended = threading.Event(), False
        """The running run's `stop`, and whether that run has ended (a fault): either way each submission ends its
        turn after the call it is in."""

    def run(
        self,
        *,
        drain: bool = True,
        poll_s: float = 1.0,
        stop: threading.Event | None = None,
        cycle: Callable[[], None] | None = None,
    ) -> dict[str, int]:
        """Works the queue (resuming interrupted work first) until it is empty (drain) or `stop` is set; `cycle`
        runs at the top of every loop (the chain's intake and weights), in this thread. From the moment `stop` is
        set no call starts; calls waiting for an endpoint are abandoned and those in flight finish. Submissions
        still working when the run ends otherwise (a fault) stop after their current call too."""
        stop = self._stop = stop or threading.Event()
        self._ended = False
        with self.ledger.exclusive():
            if n := self.ledger.recover():
                log.warning("%d stage attempt(s) were interrupted by a previous stop; they count as failed tries", n)
            inflight: dict = {}
            with ThreadPoolExecutor(self.workers, thread_name_prefix="hotfloat-pipeline") as pool:
                try:
                    while not stop.is_set():
                        if cycle is not None:
                            cycle()
                        for sub in self.ledger.pending(self.through):
                            if sub.id not in inflight.values() and len(inflight) < self.workers:
                                inflight[pool.submit(self.finish, sub.id)] = sub.id
                        if not inflight:
                            if drain:
                                break
                            stop.wait(poll_s)
                            continue
                        done, _ = wait(list(inflight), timeout=poll_s, return_when=FIRST_COMPLETED)
                        for f in done:
                            del inflight[f]
                            f.result()
                finally:
                    self._ended = True
                    if inflight:
                        self.on_stop()
        return self.ledger.counts()

    def _stopping(self) -> bool:
        return self._stop.is_set() or self._ended

    def finish(self, sid: int) -> Submission:
        """Runs stages for one submission until it is final or at `through`."""
        sub = self.ledger.get(sid)
        while not sub.state.final and sub.state is not self.through and not self._stopping():
            sub = self.step(sub)
        return sub

    def step(self, sub: Submission) -> Submission:
        """One stage for one submission: a verdict advances or fails it, a fault is retried or ends NO_DECISION."""
        stage = NEXT[sub.state][0]
        if (tries := self.ledger.failed_attempts(sub.id, stage)) >= self.max_attempts:
            return self._decide(sub, State.NO_DECISION, f"{stage}: no decision after {tries} failed attempts")
        begun: list[str] = []

        def begin(where: str = "", *, ran: bool = False) -> None:
            """Records the try once its call holds an endpoint: a call still waiting for one has cost nothing, and
            a validator killed then leaves no try that never ran. Once the run is stopped no call starts."""
            if begun:
                return
            if not ran and self._stopping():
                raise InfrastructureError("the validator is stopping: the call was not made")
            self.ledger.begin_attempt(sub.id, stage, where)
            begun.append(where)
            self.on_event(sub.id, stage, f"started at {where}" if where else "started")

        try:
            result = self._call(stage, sub, begin)
        except Exception as e:
            if not begun and self._stopping():  # stopped before the call held an endpoint: nothing ran
                return sub
            begin(
                ran=True
            )  # a call that failed before it held an endpoint (a configuration fault) is a try: tries stay bounded
            return self._failed(sub, stage, e)
        begin(ran=True)
        return self._record(sub, stage, result)

    def _failed(self, sub: Submission, stage: str, e: Exception) -> Submission:
        if isinstance(e, StageRefused):
            self.ledger.end_attempt(sub.id, stage, "refused", str(e))
            raise InfrastructureError(f"{stage}: the service refused the validator: {e}") from None
        if isinstance(e, HotfloatError):
            return self._retry(sub, stage, str(e))
        # one submission's fault is counted against it alone; the others go on
        log.error("#%d %s: internal fault: %s: %s", sub.id, stage, type(e).__name__, e)
        return self._retry(sub, stage, f"internal fault: {type(e).__name__}: {e}")

    def _call(self, stage: str, sub: Submission, begin: OnStart) -> Outcome:
        archive = self.ledger.archive(sub.id)

        def progress(name: str, message: str) -> None:
            self.on_progress(sub.id, name, message)

        if stage in ("scan", "build"):
            begin()  # one compiler: nothing to wait for
            call = self.stages.scan if stage == "scan" else self.stages.build
            return call(archive, sub.identity, progress)
        if stage == "qualify":
            return self.stages.qualify(archive, sub.identity, progress, on_start=begin)
        if stage == "score":  # the reproduction runs elsewhere when it can: a host's fault must not reproduce itself
            first = self.ledger.evidence(sub.id, State.QUALIFIED, StageEvidence[Qualified])
            earlier = ([Run.of(first)] if first else []) + reproductions(self.ledger, sub.id)
            return self.stages.qualify(
                archive, sub.identity, progress, on_start=begin, avoid=earlier[-1].endpoint if earlier else None
            )
        if stage != "admit":
            raise InfrastructureError(f"no client for stage {stage}")
        row = self.ledger.evidence(sub.id, State.BUILT, StageEvidence[BuildRecord])
        if row is None:
            raise InfrastructureError("the ledger holds no build evidence for this submission")
        built = Outcome.from_ledger(row, {n: self.ledger.blob(d) for n, d in row.artifacts.items()})
        return self.stages.admit(archive, sub.identity, built, progress, on_start=begin)

    def _record(self, sub: Submission, stage: str, result: Outcome) -> Submission:
        if stage == "score":
            return self._settle(sub, result)
        evidence = result.ledger_evidence()
        also = add_run(sub.id, 1, Run.of(evidence)) if stage == "qualify" else None
        if result.status in SKIPPABLE.get(stage, FORWARD):
            reason = "; ".join(result.reasons) or result.status.value
            self.on_event(sub.id, stage, f"{result.status.value} -> {NEXT[sub.state][1].value}")
            return self.ledger.advance(
                sub.id, sub.state, NEXT[sub.state][1], reason, evidence, result.artifacts, also=also
            )
        to = State.NO_DECISION if result.status in UNDECIDED else State.FAILED
        why = "; ".join(result.reasons) or f"{stage} returned {result.status.value}"
        return self._decide(sub, to, f"{stage}: {why}", evidence, also)

    def _settle(self, sub: Submission, latest: Outcome[Qualified]) -> Submission:
        """Settles the runs so far by the one rule (`settle`): SCORED at the lowest score, FAILED or NO_DECISION, or
        (every run passed, and another could bring the combined bound under the target) the run banked for the next."""
        first = self.ledger.evidence(sub.id, State.QUALIFIED, StageEvidence[Qualified])
        reproduced = latest.ledger_evidence()
        try:
            if first is None:
                raise ValueError("the ledger holds no first qualification")
            runs = [Run.of(first), *reproductions(self.ledger, sub.id), Run.of(reproduced)]
            settled = settle([r.attempt(sub.identity) for r in runs], self.settlement)
        except ValueError as e:  # a score outside [0, 1], a malformed run: the service's fault
            scores = [(r.status.value, r.record.score) for r in (first, reproduced) if r is not None]
            return self._retry(sub, "score", f"unusable scores {scores}: {e}")
        if settled is None:
            bound = math.prod(r.attempt(sub.identity).bound for r in runs)
            why = (
                f"PASS {len(runs)} of at most {self.settlement.max_runs}: combined false-PASS bound {bound:.2%} is "
                f"over the {self.settlement.target:.0%} target, so it is reproduced again"
            )
            self.on_event(sub.id, "score", why)
            bank(self.ledger, sub.id, len(runs), reproduced, why)
            return self.ledger.get(sub.id)
        evidence = ScoreEvidence(**dict(reproduced), runs=runs)
        row = add_run(sub.id, len(runs), runs[-1])
        if settled.status is not Status.PASS:
            to = State.FAILED if settled.status is Status.FAIL else State.NO_DECISION
            return self._decide(sub, to, f"score: {settled.reason}", evidence, row)
        pool = slot_set(unpack(self.ledger.archive(sub.id)))
        evidence = evidence.model_copy(update={"settled": settled, "slot_set": pool})
        worth = "provisional" if settled.provisional else "full"
        self.on_event(sub.id, "score", f"PASS -> scored {settled.score:.4f} in {pool} ({worth})")
        return record_scored(self.ledger, sub, settled, pool, settled.reason, evidence, self.settlement, row)

    def _retry(self, sub: Submission, stage: str, why: str) -> Submission:
        self.ledger.end_attempt(sub.id, stage, "retry", why)
        tries = self.ledger.failed_attempts(sub.id, stage)
        self.on_event(sub.id, stage, f"attempt {tries} failed: {why}")
        if tries >= self.max_attempts:
            return self._decide(
                sub, State.NO_DECISION, f"{stage}: no decision after {tries} failed attempts (last: {why})"
            )
        self._stop.wait(self.backoff_s * tries)
        return self.ledger.get(sub.id)

    def _decide(
        self,
        sub: Submission,
        to: State,
        reason: str,
        evidence: StageEvidence | None = None,
        also: Callable[[sqlite3.Connection], None] | None = None,
    ) -> Submission:
        self.on_event(sub.id, NEXT[sub.state][0], f"{to.value}: {reason}")
        return self.ledger.advance(sub.id, sub.state, to, reason, evidence, also=also)
