"""The gate twin's part of the protocol: when T runs, and which of its passes the gate reads.

T is a stock engine whose outputs of the slots C routed are nudged by an accurate kernel's rounding
(hotfloat.seams); it serves the first look's prompts untimed, and the gate weighs C's divergence from B against T's.
Where it runs depends on the memory plan (hotfloat.qualify.isolation.memory):

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

from collections.abc import Collection
from itertools import combinations
from typing import Literal

from .isolation.resident import EngineFault, Ready, Served, cpu_sets
from .records import RunFrame

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


class TwinSteps:
    """T's steps, run by hotfloat.qualify.protocol.Protocol (whose fleet, tallies and names they use)."""

    twin_served: dict[tuple[str, ...], list[Served] | EngineFault]

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
