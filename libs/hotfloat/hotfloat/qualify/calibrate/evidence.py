"""Qualifications formed from a calibration collection: the completions the device keeps of its first rounds
(`KeptRound`, one JSON line each in `<raw>.outputs.jsonl`) and `evidence_from`, which turns three of its engines into
a recomputable qualification (`hotfloat qualify calibrate evidence`)."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ...bundle.bounded import read_file
from ...record import Record, first_error
from .files import CalibrationRaw
from ..calibration import CalibrationFile, describe
from ..decision import judge
from ..evidence import Evidence
from ..records import RuleConfig, RunFrame

OUTPUTS_BYTES = 256 << 20
"""Kept completions: the evidence formed from three of the engines must fit in 32 MiB, so a file of B1, B2 and a
few candidates stays well inside this."""


class KeptRound(Record):
    """One engine's completions in one round, as a qualification's frame holds them."""

    round: int
    engine: str
    latency_s: list[float]
    tokens: list[list[int]]
    logprobs: list[list[float]]
    margins: list[list[float]]


def evidence_from(
    raw: CalibrationRaw, outputs: Path, candidate: str, rule: RuleConfig, file: CalibrationFile | None = None
) -> Evidence:
    """A qualification of `candidate` formed from a collection: B1 as B, the candidate as C, B2 as B', over the
    kept rounds (the three were served in a random order within each round, among the collection's other engines).
    The rule's looks are capped to the kept rounds; the decision is `judge`'s. `file`: the record `rule` came from,
    named when the capped rule and the collection's engine are its own."""
    if candidate not in raw.candidates or candidate not in raw.kept or not {"B1", "B2"} <= set(raw.kept):
        raise ValueError(f"{candidate!r} is not a candidate whose completions were kept (kept: {raw.kept})")
    try:
        text = read_file(outputs, OUTPUTS_BYTES).decode()
    except ValueError as e:
        raise ValueError(f"{outputs}: {e}") from None
    kept: dict[tuple[int, str], KeptRound] = {}
    for i, line in enumerate(text.splitlines()):
        try:
            k = KeptRound.model_validate_json(line)
        except ValidationError as e:
            raise ValueError(f"{outputs} line {i + 1}: {first_error(e)}") from None
        kept[(k.round, k.engine)] = k
    trio = ["B1", candidate, "B2"]
    n = 0
    while n < len(raw.rounds) and all((n, e) in kept for e in trio):
        n += 1
    looks = min(rule.max_looks, n // rule.look_rounds)
    if looks < 1:
        raise ValueError(f"only {n} kept rounds, fewer than one look of {rule.look_rounds}")
    rule = rule.model_copy(update={"max_looks": looks})
    frames = [
        RunFrame(
            index=i,
            role="C" if e == candidate else "B",
            ok=True,
            pass_s=[raw.rounds[r].pass_s[e] for r in range(n)],
            latency_s=[kept[(r, e)].latency_s for r in range(n)],
            tokens=[kept[(r, e)].tokens for r in range(n)],
            logprobs=[kept[(r, e)].logprobs for r in range(n)],
            margins=[kept[(r, e)].margins for r in range(n)],
            routed=raw.routed.get(e, {}) if e == candidate else {},
            boot_s=raw.boot_s[e],
            tokens_per_s=sum(q.max_new_tokens for b in raw.workload.batches for q in b)
            * n
            / sum(raw.rounds[r].pass_s[e] for r in range(n)),
        )
        for i, e in enumerate(trio)
    ]
    order = [[trio.index(e) for e in raw.rounds[r].order if e in trio] for r in range(n)]
    decision = judge(frames, rule, order)
    used = decision.rounds or n
    seconds = max(raw.boot_s[e] for e in trio) + sum(raw.rounds[r].pass_s[e] for r in range(used) for e in trio)
    return Evidence(
        bundle_identity=raw.candidates[candidate],
        engine=raw.engine,
        engine_identity=raw.engine_identity,
        engine_info=raw.engine_info,
        workload=raw.workload,
        order=order,
        rule=rule,
        env=raw.env,
        sandboxed=raw.sandboxed,
        frames=frames,
        decision=decision,
        calibration=describe(file, rule, raw.engine_info, raw.engine.device),
        started=raw.started,
        seconds=seconds,
    )
