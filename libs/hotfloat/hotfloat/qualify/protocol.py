"""One qualification's resident-engine protocol: boot, a settling round, timed rounds with looks, the twin after the
first look, the engines' counts, and the frames `judge` reads.

Engines B, C, B' (and the gate's twin T) boot concurrently, each in its own sandbox. A settling round (one untimed
pass each, baselines first, on prompts no timed round uses) measures how long a pass takes, so no engine can hold
the host longer than `stall_factor` times the slowest baseline pass (never less than `stall_floor_s`): a candidate
that stalls is at fault quickly, instead of after a fixed five minutes. Then rounds: one pass per engine, in an
order drawn from the secret seed, each timed alone (hotfloat.qualify.isolation keeps every other engine drained,
locked and stopped, and checks it). After the first look's rounds the validator asks C which slots it routed and
enables the twin's perturbation on exactly those, T serves the same prompts untimed and leaves; the gate compares
C's divergence from B with T's. The loop stops at the first decision or when the budget is spent. Then B, C and B'
hand over their in-engine audits (the same secret sample of slot calls in each, kept in eager code and inside
CUDA-graph replays; hotfloat.seams.audit), which the validator recomputes with the slots' fp32 references.

Every fault is charged to the engine that had it (records.FaultKind); only faults of the validator's own
infrastructure are `host`. `judge` then turns a candidate's fault into a FAIL and a baseline's or the twin's into
NO_DECISION (hotfloat.qualify.decision).
"""

from __future__ import annotations

import hashlib
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from .decision import judge
from .fleet import Fleet, Ready, Served
from .gate import gate
from .records import AuditRecord, Decision, EngineSpec, IsolationRecord, Role, RuleConfig, RunFrame, Workload
from .resident import EngineFault, cpu_sets
from .rule import decide

Progress = Callable[[str, int, int], None]
"""progress(description, rounds done, most rounds possible)."""


@dataclass(frozen=True)
class Outcome:
    """What the protocol produced: the raw frames, the decision they support, and how the run was isolated."""

    frames: list[RunFrame]
    twin: RunFrame | None
    identity: str | None
    info: dict[str, str]
    order: list[list[int]]
    decision: Decision
    isolation: IsolationRecord
    audit: list[AuditRecord] | None


def round_order(seed: int, round_index: int, n: int = 3) -> list[int]:
    """The order the engines serve a round's pass in, drawn from the workload seed (secret until the end)."""
    digest = hashlib.sha256(f"{seed}:order:{round_index}".encode()).digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


class _Acc:
    """What one engine served so far, and its fault if it had one."""

    def __init__(self, index: int, role: Role):
        self.index, self.role = index, role
        self.pass_s: list[float] = []
        self.lat: list[list[float]] = []
        self.outs: list[list[dict]] = []
        self.error: str | None = None
        self.fault: str | None = None
        self.routed: dict[str, int] = {}
        self.stock: dict[str, int] = {}
        self.boot_s = self.wall_s = 0.0
        self.generated = 0

    def fail(self, message: str, kind: str) -> None:
        if self.error is None:
            self.error, self.fault = message[:2000] or kind, kind

    def add(self, served: Served) -> None:
        self.pass_s.append(served.seconds)
        self.lat.append(served.latency_s)
        self.outs.append(served.outputs)

    def frame(self, n: int) -> RunFrame:
        ok = self.error is None
        cut = lambda xs: xs[:n] if ok else []  # noqa: E731
        timed = sum(self.pass_s[:n])
        return RunFrame(
            index=self.index,
            role=self.role,
            ok=ok,
            raised=self.fault == "raised",
            fault=self.fault,
            error=self.error,
            pass_s=cut(self.pass_s),
            latency_s=cut(self.lat),
            tokens=[[o["tokens"] for o in p] for p in cut(self.outs)],
            logprobs=[[o["logprobs"] for o in p] for p in cut(self.outs)],
            margins=[[o["margins"] for o in p] for p in cut(self.outs)],
            routed=self.routed,
            stock=self.stock,
            wall_s=self.wall_s,
            boot_s=self.boot_s,
            tokens_per_s=self.generated / timed if ok and timed else 0.0,
        )


class Protocol:
    """Runs once: `run()` boots the arms (B, C, B' and optionally T) as a Fleet, serves rounds and returns the
    Outcome. Engine i is named `f"{i}{role}"` in the fleet."""

    def __init__(
        self,
        engine: EngineSpec,
        workload: Workload,
        options,
        arms: list[dict],
        progress: Progress | None,
        declared: set[str] = frozenset(),
    ):
        self.engine, self.workload, self.options, self.arms = engine, workload, options, arms
        self.declared = declared
        """The slots the candidate's manifest declares: the only ones it can route, and the twin can perturb."""
        self.progress = progress or (lambda *a: None)
        self.rule: RuleConfig = options.rule
        self.roles: list[Role] = ["B", "C", "B", "T"][: len(arms)]
        self.names = [f"{i}{r}" for i, r in enumerate(self.roles)]
        self.accs = [_Acc(i, r) for i, r in enumerate(self.roles)]
        self.fleet: Fleet
        self.audits: list[AuditRecord] | None = None

    @property
    def failed(self) -> bool:
        return any(a.error is not None for a in self.accs)

    def run(self) -> Outcome:
        rule = self.rule
        ready, order = None, []
        baselines = [n for n, r in zip(self.names, self.roles, strict=True) if r != "C"]
        with Fleet(self.engine, self.workload, self.options, reference=baselines) as self.fleet:
            self.progress("booting B, C, B'" + (", T" if len(self.arms) > 3 else ""), 0, rule.max_rounds)
            ready = self._boot(time.monotonic() + self.options.startup_timeout_s)
            self._settle()
            done = 0
            while done < rule.max_rounds and not self.failed:
                order.append(round_order(self.workload.seed, done))
                self._round(done, order[-1])
                done += 1
                self.progress(f"round {done}", done, rule.max_rounds)
                if done == rule.look_rounds and len(self.arms) > 3:
                    self._twin()
                if done % rule.look_rounds == 0 and not self.failed and self._settled(done):
                    break
            self._audit()
            self._stop()
        for acc, name in zip(self.accs, self.names, strict=True):
            acc.wall_s = self.fleet.lifetimes.get(name, 0.0)
        n = min(len(a.pass_s) for a in self.accs[:3])
        frames = [a.frame(n) for a in self.accs[:3]]
        twin = self._twin_frame()
        decision = judge(frames, rule, order[:n], twin, self.audits)
        if decision is None:  # a fault before the first look: judge has nothing to weigh
            decision = Decision(status="NO_DECISION", reason="the protocol ended before the rule could look")
        self.progress("done", rule.max_rounds, rule.max_rounds)
        return Outcome(
            frames,
            twin,
            ready.identity if ready else None,
            ready.info if ready else {},
            order[:n],
            decision,
            self.fleet.isolation(),
            self.audits,
        )

    def _fault(self, name: str, f: EngineFault) -> bool:
        """A fault is charged to the engine that had it and ends the round (and with it the protocol)."""
        self.accs[self.names.index(name)].fail(str(f), f.kind)
        return False

    def _boot(self, deadline: float) -> Ready | None:
        """Boots every arm (they boot concurrently); B' and T must report B's identity (else NO_DECISION), and C
        must too (else C misreported itself: its fault). Returns B's report."""
        o = self.options
        audit = {"audit_key": secrets.randbits(52), "audit_rate": o.audit_rate} if o.audit_rate else {}
        arms = {
            name: {**arm, **audit, "extra_passes": o.extra_passes.get(role, 0)}
            for name, role, arm in zip(self.names, self.roles, self.arms, strict=True)
        }
        cpus = cpu_sets(3)
        got = self.fleet.boot(arms, [cpus[i % 3] for i in range(len(arms))], deadline)
        for acc, name in zip(self.accs, self.names, strict=True):
            if isinstance(got[name], EngineFault):
                acc.fail(str(got[name]), got[name].kind)
            else:
                acc.boot_s = got[name].boot_s
        b = got[self.names[0]]
        if not isinstance(b, Ready):
            return None
        for k, name in enumerate(self.names[1:], 1):
            if isinstance(got[name], Ready) and got[name].identity != b.identity:
                who = "candidate engine reported identity" if k == 1 else f"engine {k} reported identity"
                self.accs[k].fail(f"{who} {got[name].identity[:12]}, not the baseline's {b.identity[:12]}", "identity")
        return b

    def _settle(self) -> None:
        """One untimed pass per engine, baselines first, on prompts no timed round uses: the stall reference."""
        if not self.failed:
            self.fleet.round(-1 - self.workload.warmup_passes, [self.names[i] for i in (0, 2, 1)], self._fault)

    def _round(self, r: int, order: list[int]) -> None:
        """One timed pass on each engine, engine after engine in `order`, on this round's fresh prompts."""
        generated = sum(q.max_new_tokens for batch in self.workload.batches for q in batch)
        for name, served in self.fleet.round(r, [self.names[i] for i in order], self._fault).items():
            acc = self.accs[self.names.index(name)]
            acc.add(served)
            acc.generated += generated

    def _twin(self) -> None:
        """T perturbs exactly the slots C routed so far, serves the first look's prompts untimed, then leaves."""
        t, acc = self.names[3], self.accs[3]
        if t not in self.fleet.engines or self.failed:
            return
        try:
            routed = self.fleet[self.names[1]].counts(self.options.batch_timeout_s).routed
        except EngineFault as f:
            self.accs[1].fail(f"reporting its counts: {f}", f.kind)
            return
        used = {s for s, n in routed.items() if n > 0}
        if used - self.declared:
            self.accs[1].fail(
                f"reported calls routed to slots its manifest does not declare: {sorted(used - self.declared)}",
                "protocol",
            )
            return
        try:
            self.fleet[t].twin_slots(sorted(used), self.options.batch_timeout_s)
            for r in range(self.rule.look_rounds):
                served = self.fleet.round(r, [t], self._fault)
                if t not in served:
                    return
                acc.add(served[t])
            counts = self.fleet[t].stop(self.options.batch_timeout_s)
            acc.routed, acc.stock = counts.routed, counts.stock
        except EngineFault as f:
            acc.fail(str(f), f.kind)
        finally:
            self.fleet.drop(t)

    def _twin_frame(self) -> RunFrame | None:
        """Everything the twin served (it serves untimed, so its passes are not cut to the timed rounds)."""
        return self.accs[3].frame(len(self.accs[3].pass_s)) if len(self.accs) > 3 else None

    def _settled(self, n: int) -> bool:
        """Whether the gate or the rule already decides on the first n rounds (counts are not needed to know that)."""
        frames = [a.frame(n) for a in self.accs[:3]]
        twin = self._twin_frame()
        if (
            twin is not None
            and not twin.ok
            or gate(frames, self.rule.logprob_tol, twin, self.rule.gate_slack)[0] != "PASS"
        ):
            return True
        return decide(frames[0].pass_s, frames[1].pass_s, frames[2].pass_s, self.rule) is not None

    def _audit(self) -> None:
        """B, C and B' hand over what their audits kept (the same secret sample of calls in each), checked here
        against the slots' fp32 references; a reply that is not the protocol is that engine's fault."""
        if self.failed or not self.options.audit_rate:
            return
        from .audit import audit_record

        audits = []
        for i in range(3):
            try:
                parts = self.fleet[self.names[i]].audit(self._stop_timeout())
            except EngineFault as f:
                self.accs[i].fail(f"handing over its audit: {f}", f.kind)
                return
            audits.append(audit_record(i, self.roles[i], parts))
        self.audits = audits

    def _stop(self) -> None:
        live = [n for n, a in zip(self.names, self.accs, strict=True) if n in self.fleet.engines and a.error is None]
        for name, got in self.fleet.stop(live, self._stop_timeout()).items():
            acc = self.accs[self.names.index(name)]
            if isinstance(got, EngineFault):
                acc.fail(f"at stop: {got}", got.kind)
            else:
                acc.routed, acc.stock = got.routed, got.stock

    def _stop_timeout(self) -> float:
        return max(30.0, self.fleet.allowance())
