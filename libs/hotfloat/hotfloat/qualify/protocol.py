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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from ..errors import InfrastructureError
from .decision import judge
from .gate import gate
from .host import model_view
from .isolation import Isolation
from .records import AuditRecord, Decision, EngineSpec, IsolationRecord, Role, RuleConfig, RunFrame, Workload
from .resident import EngineFault, ResidentEngine, cpu_sets
from .rule import decide
from .workload import kv_cap, prompts

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

    def frame(self, n: int) -> RunFrame:
        ok = self.error is None
        cut = lambda xs: xs[:n] if ok else []  # noqa: E731
        timed = sum(self.pass_s[:n])
        return RunFrame(index=self.index, role=self.role, ok=ok, raised=self.fault == "raised", fault=self.fault,
                        error=self.error, pass_s=cut(self.pass_s), latency_s=cut(self.lat),
                        tokens=[[o["tokens"] for o in p] for p in cut(self.outs)],
                        logprobs=[[o["logprobs"] for o in p] for p in cut(self.outs)],
                        margins=[[o["margins"] for o in p] for p in cut(self.outs)],
                        routed=self.routed, stock=self.stock, wall_s=self.wall_s, boot_s=self.boot_s,
                        tokens_per_s=self.generated / timed if ok and timed else 0.0)


class Protocol:
    """Runs once: `run()` boots the arms (B, C, B' and optionally T), serves rounds and returns the Outcome."""

    def __init__(self, engine: EngineSpec, workload: Workload, options, arms: list[dict], model_dir: str | None,
                 progress: Progress | None, declared: set[str] = frozenset()):
        self.engine, self.workload, self.options, self.arms = engine, workload, options, arms
        self.declared = declared
        """The slots the candidate's manifest declares: the only ones it can route, and the twin can perturb."""
        self.model_dir, self.progress = model_dir, progress or (lambda *a: None)
        self.rule: RuleConfig = options.rule
        self.roles: list[Role] = ["B", "C", "B", "T"][:len(arms)]
        self.accs = [_Acc(i, r) for i, r in enumerate(self.roles)]
        self.engines: list[ResidentEngine | None] = [None] * len(arms)
        self.reference = 0.0
        """The slowest baseline (or twin) pass so far, seconds: what a stall is measured against."""
        self.audits: list[AuditRecord] | None = None

    @property
    def failed(self) -> bool:
        return any(a.error is not None for a in self.accs)

    def run(self) -> Outcome:
        rule = self.rule
        iso = Isolation.start(self.engine.device, required=self.options.gpu_isolation)
        ident, info, order = None, {}, []
        try:
            self._start()
            self.progress("booting B, C, B'" + (", T" if len(self.arms) > 3 else ""), 0, rule.max_rounds)
            ident, info = self._boot(time.monotonic() + self.options.startup_timeout_s)
            self._settle(iso)
            done = 0
            while done < rule.max_rounds and not self.failed:
                order.append(round_order(self.workload.seed, done))
                self._round(iso, done, order[-1])
                done += 1
                self.progress(f"round {done}", done, rule.max_rounds)
                if done == rule.look_rounds and len(self.arms) > 3:
                    self._twin(iso)
                if done % rule.look_rounds == 0 and not self.failed and self._settled(done):
                    break
            self._audit()
            self._stop()
        finally:
            for i, e in enumerate(self.engines):
                if e is not None:
                    self.accs[i].wall_s = e.lifetime_s
                    e.close()
            iso.close()
        n = min(len(a.pass_s) for a in self.accs[:3])
        frames = [a.frame(n) for a in self.accs[:3]]
        twin = self._twin_frame()
        decision = judge(frames, rule, order[:n], twin, self.audits)
        if decision is None:  # a fault before the first look: judge has nothing to weigh
            decision = Decision(status="NO_DECISION", reason="the protocol ended before the rule could look")
        self.progress("done", rule.max_rounds, rule.max_rounds)
        return Outcome(frames, twin, ident, info, order[:n], decision, iso.record(), self.audits)

    def _start(self) -> None:
        o, w = self.options, self.workload
        warmup = [(prompts(w, -1 - p, b), [r.max_new_tokens for r in batch])
                  for p in range(w.warmup_passes) for b, batch in enumerate(w.batches)]
        cpus = cpu_sets(3)
        audit = {"audit_key": secrets.randbits(52), "audit_rate": o.audit_rate} if o.audit_rate else {}
        for i, arm in enumerate(self.arms):
            spec = dict(self.engine.model_dump(), **arm, **audit, warmup=warmup, threads=o.threads,
                        extra_passes=o.extra_passes.get(self.roles[i], 0), cpus=cpus[i % 3],
                        graph_batches=sorted({len(b) for b in w.batches}), kv_tokens=kv_cap(w),
                        mem_fraction=o.mem_fraction, model_dir=model_view(self.model_dir, sandboxed=o.sandboxed))
            try:
                self.engines[i] = ResidentEngine(f"{i}{self.roles[i]}", spec, device=self.engine.device,
                                                 kind=self.engine.kind, sandboxed=o.sandboxed, model_dir=self.model_dir)
            except (InfrastructureError, OSError) as e:
                self.accs[i].fail(f"the engine could not be started: {e}", "host")
            except EngineFault as f:
                self.accs[i].fail(str(f), f.kind)

    def _boot(self, deadline: float) -> tuple[str | None, dict[str, str]]:
        """Waits for every ready message (they boot concurrently); B' and T must report B's identity (else
        NO_DECISION), and C must too (else C misreported itself: its fault)."""
        def ready(i):
            e = self.engines[i]
            if e is None:
                return None
            try:
                out = e.ready(deadline)
                self.accs[i].boot_s = e.boot_s
                return out
            except EngineFault as f:
                self.accs[i].fail(f"at boot: {f}", f.kind)
                return None

        with ThreadPoolExecutor(len(self.engines)) as pool:
            got = list(pool.map(ready, range(len(self.engines))))
        ident, info = got[0] if got[0] else (None, {})
        for k in range(1, len(self.engines)):
            if got[0] and got[k] and got[k][0] != ident:
                who = "candidate engine reported identity" if k == 1 else f"engine {k} reported identity"
                self.accs[k].fail(f"{who} {got[k][0][:12]}, not the baseline's {ident[:12]}", "identity")
        return ident, info

    def _settle(self, iso: Isolation) -> None:
        """One untimed pass per engine, baselines first, on prompts no timed round uses: the stall reference."""
        index = -1 - self.workload.warmup_passes
        for i in (0, 2, 1):
            if self.failed:
                return
            self._pass(iso, i, index)

    def _round(self, iso: Isolation, r: int, order: list[int]) -> None:
        """One timed pass on each engine, engine after engine in `order`, on this round's fresh prompts."""
        for i in order:
            if self.failed:
                return
            got = self._pass(iso, i, r)
            if got is None:
                return
            total, lat, outs = got
            a = self.accs[i]
            a.pass_s.append(total)
            a.lat.append(lat)
            a.outs.append(outs)
            a.generated += sum(q.max_new_tokens for batch in self.workload.batches for q in batch)

    def _pass(self, iso: Isolation, i: int, r: int) -> tuple[float, list[float], list[dict]] | None:
        """Engine i serves every batch of pass r alone; a fault is charged to whoever had it and ends the pass."""
        e, batches = self.engines[i], [(prompts(self.workload, r, b), [q.max_new_tokens for q in batch])
                                       for b, batch in enumerate(self.workload.batches)]
        allowed = self._allowance()
        total, lat, outs = 0.0, [], []
        try:
            with iso.alone(self.engines, e):
                deadline = time.monotonic() + allowed
                for ps, mx in batches:
                    s, got = e.serve(ps, mx, deadline - time.monotonic())
                    total += s
                    lat += [x for x, _ in got]
                    outs += [o for _, o in got]
        except EngineFault as f:
            at = next((k for k, x in enumerate(self.engines) if x is not None and x.name == f.who), i)
            why = str(f)
            if f.kind == "stalled" and at == i:
                why = (f"stalled: no completion within {allowed:.1f} s of the pass's start "
                       f"({self._allowance_basis()}): {f}")
            self.accs[at].fail(why, f.kind)
            return None
        if self.roles[i] != "C":
            self.reference = max(self.reference, total)
        return total, lat, outs

    def _allowance(self) -> float:
        o = self.options
        if not self.reference:
            return o.batch_timeout_s
        return min(o.batch_timeout_s, max(o.stall_floor_s, o.stall_factor * self.reference))

    def _allowance_basis(self) -> str:
        if not self.reference:
            return "no baseline pass measured yet"
        return (f"{self.options.stall_factor:g}x the slowest baseline pass, {self.reference:.2f} s, "
                f"at least {self.options.stall_floor_s:g} s")

    def _twin(self, iso: Isolation) -> None:
        """T perturbs exactly the slots C routed so far, serves the first look's prompts untimed, then leaves."""
        t, acc, c = self.engines[3], self.accs[3], self.engines[1]
        if t is None or self.failed:
            return
        try:
            routed, _ = c.counts(self.options.batch_timeout_s)
        except EngineFault as f:
            self.accs[1].fail(f"reporting its counts: {f}", f.kind)
            return
        used = {s for s, n in routed.items() if n > 0}
        if used - self.declared:
            self.accs[1].fail(f"reported calls routed to slots its manifest does not declare: {sorted(used - self.declared)}",
                              "protocol")
            return
        try:
            t.twin_slots(sorted(used), self.options.batch_timeout_s)
            for r in range(self.rule.look_rounds):
                got = self._pass(iso, 3, r)
                if got is None:
                    return
                acc.pass_s.append(got[0])
                acc.lat.append(got[1])
                acc.outs.append(got[2])
            acc.routed, acc.stock = t.stop(self.options.batch_timeout_s)
        except EngineFault as f:
            acc.fail(str(f), f.kind)
        finally:
            acc.wall_s = t.lifetime_s
            t.close()
            self.engines[3] = None

    def _twin_frame(self) -> RunFrame | None:
        """Everything the twin served (it serves untimed, so its passes are not cut to the timed rounds)."""
        return self.accs[3].frame(len(self.accs[3].pass_s)) if len(self.accs) > 3 else None

    def _settled(self, n: int) -> bool:
        """Whether the gate or the rule already decides on the first n rounds (counts are not needed to know that)."""
        frames = [a.frame(n) for a in self.accs[:3]]
        twin = self._twin_frame()
        if twin is not None and not twin.ok or gate(frames, self.rule.logprob_tol, twin, self.rule.gate_slack)[0] != "PASS":
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
                parts = self.engines[i].audit(self._stop_timeout())
            except EngineFault as f:
                self.accs[i].fail(f"handing over its audit: {f}", f.kind)
                return
            audits.append(audit_record(i, self.roles[i], parts))
        self.audits = audits

    def _stop(self) -> None:
        for i, e in enumerate(self.engines):
            if e is not None and self.accs[i].error is None:
                try:
                    self.accs[i].routed, self.accs[i].stock = e.stop(self._stop_timeout())
                except EngineFault as f:
                    self.accs[i].fail(f"at stop: {f}", f.kind)

    def _stop_timeout(self) -> float:
        return max(30.0, self._allowance())
