"""One qualification's resident-engine protocol: boot, a settling round, timed rounds with looks, the twin after the
first look, the engines' counts, and the frames `judge` reads.

The device's memory is divided first (hotfloat.qualify.isolation.memory): four resident engines where they fit, else
three, with the twin serving before C boots or after C is torn down (below). B and B' (and T) boot
concurrently, each in its own sandbox, and C boots only once they are ready (and T is gone, where T and C cannot be
resident together), so nothing C takes at boot can starve a baseline; every engine's
memory is read at ready and around every pass, and an engine over its share is at fault. A settling round (one untimed
pass each, baselines first, on prompts no timed round uses) measures how long a pass takes, so no engine can hold
the host longer than `stall_factor` times the slowest baseline pass (never less than `stall_floor_s`): a candidate
that stalls is at fault quickly, instead of after a fixed five minutes. Then rounds: one pass per engine, in an
order drawn from the secret seed, each timed alone (hotfloat.qualify.isolation keeps every other engine drained,
locked and stopped, and checks it). After the first look's rounds the validator asks C which slots it routed and
enables the twin's perturbation on exactly those, T serves the same prompts untimed and leaves (on a device too small
for four, T served them before C booted, once per subset of C's declared slots); the gate compares C's divergence
from B with T's. The loop stops at the first decision or when the budget is spent. Then B, C and B'
hand over their in-engine audits (the same secret sample of slot calls in each, kept in eager code and inside
CUDA-graph replays; hotfloat.seams.audit), which the validator recomputes with the slots' fp32 references.

Every fault is charged to the engine that had it (records.FaultKind); only faults of the validator's own
infrastructure are `host`. A baseline's or the twin's fault while C holds more than its share is C's (`memory`): C's
hoarding must never buy a re-roll. `judge` then turns a candidate's fault into a FAIL and a baseline's or the twin's into
NO_DECISION (hotfloat.qualify.decision).

Where the gate's twin T runs depends on the memory plan (`twin_mode`):

- `resident`: the device holds four engines; T boots with B and B', is told the slots C routed at the first look,
  serves, and leaves.
- `first`: the device holds three; T boots with B and B' and, before C exists, serves the first look's prompts once
  per subset of the slots C's manifest declares (C can route no others), then leaves, and C boots into its share. At
  the first look the subset C really routed picks T's passes. One boot fewer than booting T after C: on an H100 that
  is three minutes of a ten-minute qualification, and the gate can stop the rounds early again.
- `after`: the device holds three and the manifest declares more than `FIRST_MOST` slots (too many subsets to
  serve); T boots once C is torn down and serves the slots C reported at its stop.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Collection
from itertools import combinations
from typing import Literal

from .decision import judge
from ..audit.config import AuditConfig
from ..audit.kinds import KINDS
from .fleet import Counts, Fleet, Ready
from .gate import gate
from .audit_records import AuditRecord
from .records import Decision, EngineSpec, Role, RuleConfig, RunFrame, Workload
from .isolation.resident import EngineFault, Served, cpu_sets
from .rule import decide
from .tally import Outcome, Tally, round_order

Progress = Callable[[str, int, int], None]
"""progress(description, rounds done, most rounds possible)."""
Mode = Literal["none", "resident", "first", "after"]
FIRST_MOST = 3
"""Declared slots up to which T serves every subset before C boots (2^3 = 8 configurations of the look's passes)."""


def twin_mode(wanted: bool, apart: bool, declared: Collection[str]) -> Mode:
    """How T runs: not at all, beside C, before C, or after C."""
    if not wanted:
        return "none"
    if not apart:
        return "resident"
    return "first" if len(declared) <= FIRST_MOST else "after"


def subsets(declared: Collection[str]) -> list[tuple[str, ...]]:
    """Every set of slots C could route, the empty one (C routed nothing) included, each sorted."""
    names = sorted(declared)
    return [c for k in range(len(names) + 1) for c in combinations(names, k)]


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
        self.accs = [Tally(i, r) for i, r in enumerate(self.roles)]
        self.fleet: Fleet
        self.audits: list[AuditRecord] | None = None
        self.audit_config: AuditConfig | None = None
        """The qualification's audit settings with its secret key (None: no audit)."""
        self.twin: Mode = "none"
        """How the gate's twin runs: beside C, before C or after C (`twin_mode`)."""
        self.boots: dict[str, Ready | EngineFault] = {}
        self.specs: dict[str, dict] = {}
        """What each engine's spec adds to the fleet's (its arm, the audit's key and rate, the calibration passes)."""
        self.twin_served: dict[tuple[str, ...], list[Served] | EngineFault] = {}
        """Where T served before C booted: its passes (or its fault) under each subset of C's declared slots."""

    @property
    def failed(self) -> bool:
        return any(a.error is not None for a in self.accs)

    def run(self) -> Outcome:
        rule = self.rule
        ready, order = None, []
        baselines = [n for n, r in zip(self.names, self.roles, strict=True) if r != "C"]
        with Fleet(self.engine, self.workload, self.options, reference=baselines) as self.fleet:
            plan = self.fleet.plan_memory(wanted=len(self.arms), least=3)
            self.twin = twin_mode(len(self.arms) > 3, plan is not None and plan.twin_apart, self.declared)
            ready = self._boot()
            self._settle()
            self._audit(-1)
            done = 0
            while done < rule.max_rounds and not self.failed:
                order.append(round_order(self.workload.seed, done))
                self._round(done, order[-1])
                self._audit(done)
                done += 1
                self.progress(f"round {done}", done, rule.max_rounds)
                if done == rule.look_rounds and self.twin in ("resident", "first"):
                    self._twin()
                if done % rule.look_rounds == 0 and not self.failed and self._settled(done):
                    break
            self._stop()
            if self.twin == "after":
                self._twin(self.accs[1].routed)
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
            self.fleet.memory(),
        )

    def _fault(self, name: str, f: EngineFault) -> bool:
        """A fault is charged to the engine that had it and ends the round (and with it the protocol)."""
        self._charge(name, str(f), f.kind)
        return False

    def _charge(self, name: str, message: str, kind: str) -> None:
        """Charges `name`; a baseline's or the twin's fault while C is over its memory share is C's as well, and C's
        fault decides (hotfloat.qualify.decision)."""
        self.accs[self.names.index(name)].fail(message, kind)
        c = self.names[1]
        if name == c or c not in self.fleet.engines or self.accs[1].error is not None:
            return
        try:
            over = self.fleet.iso.over_share(list(self.fleet.engines.values()), owner=c)
        except EngineFault as err:  # the reading itself went unanswered while C ran: C's, like any silent reply
            over, message = [c], f"{message}; then {err}"
        if c in over:
            self.accs[1].fail(
                f"memory: engine {c} was over its GPU memory share when engine {name} failed: {message}", "memory"
            )

    def _boot(self) -> Ready | None:
        """Boots the baselines (and T, unless it waits for C's teardown) concurrently, then C once they are ready (and
        T has served and left, where the two cannot be resident together); B' and T must report B's identity (else
        NO_DECISION), and C must too (else C misreported itself: its fault). Returns B's report. A stock B's JIT
        caches warm the later boots (no candidate code ever ran in its sandbox)."""
        o = self.options
        self.audit_config = audit_config(o.audit_keep, self.declared, self.workload)
        audit = {"audit": self.audit_config.to_wire()} if self.audit_config else {}
        self.specs = arms = {
            name: {**arm, **audit, "extra_passes": o.extra_passes.get(role, 0)}
            for name, role, arm in zip(self.names, self.roles, self.arms, strict=True)
        }
        cpus = dict(zip(self.names, (cpu_sets(3) * 2)[: len(self.names)], strict=True))
        first = [
            n for n, r in zip(self.names, self.roles, strict=True) if r == "B" or (r == "T" and self.twin != "after")
        ]
        self.progress(f"booting {', '.join(first)}", 0, self.rule.max_rounds)
        got = self._boot_group({n: arms[n] for n in first}, cpus)
        b = got.get(self.names[0])
        for name in self.names[2:] if isinstance(b, Ready) else []:
            self._same_identity(name)
        if self.twin == "first":
            self._twin_first()
        if not self.failed and isinstance(b, Ready):
            if not self.arms[0].get("bundle"):
                self.progress(self.fleet.warm_caches(self.names[0]), 0, self.rule.max_rounds)
            self.progress(f"booting {self.names[1]}", 0, self.rule.max_rounds)
            self._boot_group({self.names[1]: arms[self.names[1]]}, cpus)
        if not isinstance(b, Ready):
            return None
        self._same_identity(self.names[1])
        return b

    def _same_identity(self, name: str) -> None:
        """An engine that booted must report B's identity (C that does not misreported itself: its fault)."""
        k, b, r = self.names.index(name), self.boots[self.names[0]], self.boots.get(name)
        if isinstance(r, Ready) and r.identity != b.identity:
            who = "candidate engine reported identity" if k == 1 else f"engine {k} reported identity"
            self.accs[k].fail(f"{who} {r.identity[:12]}, not the baseline's {b.identity[:12]}", "identity")

    def _boot_group(self, arms: dict[str, dict], cpus: dict[str, list[int] | None]) -> dict[str, Ready | EngineFault]:
        """Boots `arms` together and records each engine's boot or fault (an earlier engine's fault too: the memory
        reading at ready covers every engine)."""
        got = self.fleet.boot(arms, [cpus[n] for n in arms], time.monotonic() + self.options.startup_timeout_s)
        self.boots.update(got)
        for name, r in got.items():
            if isinstance(r, EngineFault):
                self._charge(name, str(r), r.kind)
            else:
                self.accs[self.names.index(name)].boot_s = r.boot_s
        return got

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

    def _settled(self, n: int) -> bool:
        """Whether the gate or the rule already decides on the first n rounds (counts are not needed to know that)."""
        frames = [a.frame(n) for a in self.accs[:3]]
        if self.twin == "after":  # the gate waits for the twin, after the timing: only the speed rule can stop early
            return decide(frames[0].pass_s, frames[1].pass_s, frames[2].pass_s, self.rule) is not None
        twin = self._twin_frame()
        if (
            twin is not None
            and not twin.ok
            or gate(frames, self.rule.logprob_tol, twin, self.rule.gate_slack)[0] != "PASS"
        ):
            return True
        return decide(frames[0].pass_s, frames[1].pass_s, frames[2].pass_s, self.rule) is not None

    def _audit(self, rnd: int) -> None:
        """B, C and B' hand over round `rnd`'s audit, opened and judged here at once; a reply that is not the
        protocol is that engine's fault."""
        cfg = self.audit_config
        if self.failed or cfg is None:
            return
        from .audit import audit_round

        got = []
        for i in range(3):
            try:
                parts = self.fleet[self.names[i]].audit(rnd, self._stop_timeout())
            except EngineFault as f:
                self._charge(self.names[i], f"handing over its audit of round {rnd}: {f}", f.kind)
                return
            got.append(audit_round(i, self.roles[i], rnd, parts, cfg))
        self.audits = got if self.audits is None else [a.add(b) for a, b in zip(self.audits, got, strict=True)]

    def _stop(self) -> None:
        """B, C and B' report their seam counts and end (the twin already left, or boots after this: then each must
        give its memory back first, so nothing C held can make T's boot fail into a NO_DECISION)."""
        live = [
            n for n, a in zip(self.names[:3], self.accs[:3], strict=True) if n in self.fleet.engines and a.error is None
        ]
        for name, got in self.fleet.stop(live, self._stop_timeout()).items():
            acc = self.accs[self.names.index(name)]
            if isinstance(got, EngineFault):
                self._charge(name, f"at stop: {got}", got.kind)
            elif isinstance(got, Counts):
                acc.routed, acc.stock = got.routed, got.stock
        for name in self.names[:3]:
            if name not in self.fleet.engines:
                continue
            if self.twin != "after":
                self.fleet.drop(name)
            elif not self.fleet.release(name):
                self._charge(
                    name, f"memory: the device still charged memory to engine {name} once it had ended", "memory"
                )

    def _stop_timeout(self) -> float:
        return max(30.0, self.fleet.allowance())

    def _twin_first(self) -> None:
        """Before C boots: T serves the first look's prompts under each subset of C's declared slots, then leaves
        and the device has its memory back. A subset T has no nudge site for is kept as its fault, charged only if C
        routes exactly that subset."""
        t, acc, timeout = self.names[3], self.accs[3], self.options.batch_timeout_s
        self.twin_served = {}
        if self.failed or t not in self.fleet.engines:
            return
        try:
            for used in subsets(self.declared):
                self.progress(f"twin {t} serves with {', '.join(used) or 'no slot'} nudged", 0, self.rule.max_rounds)
                try:
                    self.fleet[t].twin_slots(list(used), timeout)
                except EngineFault as f:
                    if f.kind != "protocol":
                        raise
                    self.twin_served[used] = f
                    continue
                if (passes := self._twin_look(t)) is None:
                    return
                self.twin_served[used] = passes
            self._twin_counts(t)
        except EngineFault as f:
            acc.fail(str(f), f.kind)
        finally:
            if t in self.fleet.engines and not self.fleet.release(t):
                acc.fail(f"host: the device still charged memory to engine {t} after it was dropped", "host")

    def _twin(self, routed: dict[str, int] | None = None) -> None:
        """T perturbs exactly the slots C routed (so far, asked of C; or as C reported at its stop, when T boots only
        after C's teardown), serves the first look's prompts untimed, then leaves; where T served before C booted,
        the passes of the subset C routed are T's."""
        t, acc = self.names[3], self.accs[3]
        if self.failed or (self.twin == "resident" and t not in self.fleet.engines):
            return
        try:
            routed = (
                routed if routed is not None else self.fleet[self.names[1]].counts(self.options.batch_timeout_s).routed
            )
        except EngineFault as f:
            self.accs[1].fail(f"reporting its counts: {f}", f.kind)
            return
        used = tuple(sorted(s for s, n in routed.items() if n > 0))
        if set(used) - self.declared:
            self.accs[1].fail(
                f"reported calls routed to slots its manifest does not declare: {sorted(set(used) - self.declared)}",
                "protocol",
            )
            return
        if self.twin == "first":
            got = self.twin_served.get(used, EngineFault(f"the twin did not serve {list(used)}", kind="protocol"))
            if isinstance(got, EngineFault):
                acc.fail(str(got), got.kind)
                return
            for served in got:
                acc.add(served)
            return
        if t not in self.fleet.engines and not self._boot_twin():
            return
        try:
            self.fleet[t].twin_slots(list(used), self.options.batch_timeout_s)
            if (passes := self._twin_look(t)) is None:
                return
            for served in passes:
                acc.add(served)
            self._twin_counts(t)
        except EngineFault as f:
            acc.fail(str(f), f.kind)
        finally:
            if t in self.fleet.engines:
                self.fleet.drop(t)

    def _twin_look(self, t: str) -> list[Served] | None:
        """T serves the first look's prompts, untimed; None when it faulted (charged through `_fault`)."""
        passes = []
        for r in range(self.rule.look_rounds):
            got = self.fleet.round(r, [t], self._fault)
            if t not in got:
                return None
            passes.append(got[t])
        return passes

    def _twin_counts(self, t: str) -> None:
        """T stops serving and its seam counts become its tally's."""
        counts = self.fleet[t].stop(self.options.batch_timeout_s)
        self.accs[3].routed, self.accs[3].stock = counts.routed, counts.stock

    def _boot_twin(self) -> bool:
        """On a device too small for four, T boots once C is gone and B, B' have stopped; it must report B's identity."""
        t = self.names[3]
        self.progress(f"booting {t} after {self.names[1]}'s teardown", self.rule.max_rounds, self.rule.max_rounds)
        got = self._boot_group({t: self.specs[t]}, {t: cpu_sets(3)[0]}).get(t)
        self._same_identity(t)
        return isinstance(got, Ready) and not self.failed

    def _twin_frame(self) -> RunFrame | None:
        """Everything the twin served (it serves untimed, so its passes are not cut to the timed rounds)."""
        return self.accs[3].frame(len(self.accs[3].pass_s)) if len(self.accs) > 3 else None


def audit_config(keep: int, declared: set[str], workload: Workload) -> AuditConfig | None:
    """The qualification's audit: a fresh secret key, `keep` entries per stratum and round, attention entries long
    enough for the workload's longest request, and the candidate's declared slots that have a layout, which B and
    B' then hook and audit like C (None when `keep` is 0)."""
    if not keep:
        return None
    longest = max(r.prompt_len + r.max_new_tokens for batch in workload.batches for r in batch)
    return AuditConfig(
        key=(1 << 62) | secrets.randbits(62),
        keep=keep,
        context=longest,
        slots=tuple(sorted(set(declared) & set(KINDS))),
    )
