"""From raw frames to a decision: infrastructure first, then the correctness gate, then the speed rule.

`judge` is the one function both the live protocol (after every round, to know when to stop) and a later recompute
(once, over the evidence) call, so the two can never disagree. Frames are B, C, B' (resident engines).

The in-engine audit (`Evidence.audit`; hotfloat.qualify.audit) is judged right after the candidate's own faults:
what it finds against the candidate (a call wrong beyond its slot's verify tolerance, an altered or refused reply,
other calls than the baselines', a routed slot it never saw) is a FAIL that no later fault of a baseline or the twin
can turn into NO_DECISION; what it finds against a baseline is NO_DECISION after them. A gate FAIL names the slot
whose audited calls were furthest from the reference, so a kernel author knows where to look.

Faults are charged to the engine that had it (evidence v3, `RunFrame.fault`): any candidate fault but the host's is
a FAIL (dying, stalling or sending a forged frame must never buy a re-roll); a baseline's or the twin's, and the
host's, is NO_DECISION. Evidence v2 kept the older rule (a candidate that died or stalled was infrastructure).
"""

from __future__ import annotations

from .carryover import carry_over
from .gate import furthest, gate
from .audit_records import AuditRecord
from .records import Decision, RuleConfig, RunFrame
from .rule import decide


def judge(
    frames: list[RunFrame],
    rule: RuleConfig,
    order: list[list[int]],
    twin: RunFrame | None = None,
    audit: list[AuditRecord] | list | None = None,
) -> Decision | None:
    """The decision the frames so far support, or None while the protocol needs more rounds; `order[r]` is the
    engines' serving order in round r (the carry-over check reads which engine each pass followed); `twin` sets the
    gate's tolerance (hotfloat.qualify.gate)."""
    if [f.role for f in frames] != ["B", "C", "B"] or [f.index for f in frames] != [0, 1, 2]:
        raise ValueError("frames must be B, C, B' indexed 0, 1, 2")
    cand = frames[1]
    if not cand.ok and cand.fault not in (None, "host"):
        return Decision(
            status="FAIL", fault=f"C:{cand.fault}", reason=f"candidate engine at fault ({cand.fault}): {cand.error}"
        )
    audited = _audited(audit, rule.audit_slack, cand.routed) if audit is not None else None
    if audited is not None and audited.status == "FAIL":
        return audited
    for f in (frames[0], frames[2]):
        if not f.ok:
            return Decision(
                status="NO_DECISION",
                fault=f"B:{f.fault}" if f.fault else None,
                reason=f"infrastructure: baseline engine {f.index} failed: {f.error}",
            )
    if not cand.ok and cand.raised:  # evidence v2: a fault of its own doing
        return Decision(status="FAIL", gate="FAIL", reason=f"candidate engine failed: {cand.error}")
    if not cand.ok:
        return Decision(
            status="NO_DECISION",
            fault="C:host" if cand.fault else None,
            reason=f"infrastructure: candidate engine died or stalled: {cand.error}",
        )
    if len({len(f.pass_s) for f in frames}) != 1:
        raise ValueError("B, C and B' must have served the same number of rounds")
    if twin is not None and not twin.ok:
        return Decision(
            status="NO_DECISION",
            fault=f"T:{twin.fault}" if twin.fault else None,
            reason=f"infrastructure: the gate's twin engine failed: {twin.error}",
        )
    if audited is not None:
        return audited
    status, why = gate(frames, rule.logprob_tol, twin, rule.gate_slack)
    if status != "PASS":
        hint = furthest(audit) if status == "FAIL" else None
        return Decision(
            status=status, gate=status if status == "FAIL" else "N/A", reason=f"{why}; {hint}" if hint else why
        )
    if not sum(cand.routed.values()):
        return Decision(
            status="N/A", gate="PASS", reason="no engine call reached the bundle (outside its declared domain)"
        )
    lk = decide(frames[0].pass_s, cand.pass_s, frames[2].pass_s, rule)
    if lk is None:
        return None
    co = carry_over(frames, order)
    if co is not None and co.charged(rule.carry_bound):
        return Decision(
            status="FAIL",
            gate="PASS",
            rounds=lk.rounds,
            reason=f"carry-over: a baseline pass timed right after the candidate's is {co.penalty:+.2%} "
            f"(s.e. {co.se:.2%}, bound {rule.carry_bound:.2%}) against one after the other "
            "baseline: the candidate leaves work running that slows the next engine",
        )
    return Decision(
        status=lk.status,
        reason=lk.reason,
        gate="PASS",
        score=lk.score if lk.status == "PASS" else 0.0,
        improvement=lk.improvement,
        lower=lk.lower,
        upper=lk.upper,
        drift=lk.drift,
        rounds=lk.rounds,
    )


def _audited(audit: list, slack: float, routed: dict[str, int]) -> Decision | None:
    """The audit's verdict; evidence v3's records are judged as v3 judged them (hotfloat.qualify.audit_v3)."""
    from .audit_v3 import RecordV3, judge_v3

    if audit and isinstance(audit[0], RecordV3):
        got = judge_v3(audit, slack)
    else:
        from .audit import judge_audit

        got = judge_audit(audit, slack, routed)
    if got is None:
        return None
    status, why = got
    return Decision(status=status, gate="FAIL" if status == "FAIL" else "N/A", reason=why)
