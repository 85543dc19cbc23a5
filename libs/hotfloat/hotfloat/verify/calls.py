"""One op in its child: load, the bursts of calls, CUDA-graph replays, and the verdict row of every case.

The parent prepares the next burst (inputs, reference) and judges the previous one while the child runs the
current one, so neither process waits for the other's work; every draw from the secret still happens in call order,
so `--seed` replays a run exactly.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from ..bundle import Op
from ..slots import Role, SlotSpec, get_slot
from ..verdict import Status
from . import burst
from .check import Outcome, judge, reply_error
from .gates import OnRow, op_row, requested_dtypes
from .inputs import Prepared, prepare
from .launcher import ChildFault, ChildSession
from .plan import Call, Case, make_cases, schedule
from .records import VerifyOptions, VerifyRow


@dataclass(frozen=True)
class _Burst:
    """One `call` request and what the parent keeps to judge its reply."""

    calls: list[Call]
    preps: list[Prepared]
    meta: dict
    sent: list
    reply_bytes: int


def verify_op(
    child: ChildSession, identity: str, op: Op, options: VerifyOptions, rng: random.Random, emit: OnRow
) -> list[VerifyRow]:
    """Every case of `op` in `child` (launched, not yet ready), one row per case and per captured graph."""
    slot = get_slot(op.entry.slot)
    dtypes = requested_dtypes(op, options)
    cases = make_cases(
        slot, op, dtypes, options.device, rng, options.trials, options.max_shapes, options.cpu_max_elements
    )
    results: dict[int, list[Outcome]] = {c.index: [] for c in cases}
    final: dict[int, VerifyRow] = {}
    fault: str | None = None
    graph_rows: list[VerifyRow] = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: a second thread only adds barrier waits, and the child needs the core
    try:
        pending = _bursts(slot, schedule(cases, options.trials, rng), rng, options)
        current = next(pending, None)  # prepared while the child starts
        child.ready()
        deadline = time.monotonic() + options.timeout_s
        child.send(
            "load",
            {"source": op.entry.source, "entry": op.entry.entry, "root": child.bundle_root, "identity": identity},
            deadline=deadline,
        )
        following = next(pending, None)  # prepared while the child imports the op
        loaded = child.receive("load", deadline=deadline)
        if loaded.kind != "loaded":  # one row for the op: every case would repeat the same reason
            row = op_row(op, Status.FAIL, f"loading the op failed: {reply_error(loaded, 'loaded')}")
            emit(row)
            return [row]
        if current is not None:
            child.send("call", current.meta, current.sent, deadline=deadline)
        while current is not None:
            frame = child.receive("call", deadline=deadline, max_payload=current.reply_bytes)
            if following is not None:
                child.send("call", following.meta, following.sent, deadline=deadline)
            for call, prep, reply in zip(
                current.calls, current.preps, burst.split(frame, len(current.calls)), strict=False
            ):
                done = results[call.case.index]
                done.append(judge(slot, call.case.dtype, prep, reply))
                if len(done) == options.trials:
                    final[call.case.index] = _case_row(op, call.case, done, options.trials, None)
                    emit(final[call.case.index])
            # judged, and the next one prepared, while the child runs `following`
            current, following = following, next(pending, None) if following is not None else None
        if options.device == "cuda":
            graph_rows = _graphs(child, slot, op, cases, options, rng, deadline, emit)
    except ChildFault as e:
        fault = str(e)
    finally:
        torch.set_num_threads(threads)
    for c in cases:
        if c.index not in final:
            final[c.index] = _case_row(op, c, results[c.index], options.trials, fault)
            emit(final[c.index])
    return [final[c.index] for c in cases] + graph_rows


def _bursts(slot: SlotSpec, calls: list[Call], rng: random.Random, options: VerifyOptions) -> Iterator[_Burst]:
    """The calls cut into bursts, each with its tensors, reference and drawn gaps, made one at a time on demand."""
    tensors = sum(1 for a in slot.args if a.role in (Role.INPUT, Role.OUTPUT))
    for group in burst.group(calls, rng, tensors):
        preps = [prepare(slot, c.case, c.trial, c.seed) for c in group]
        gaps = [burst.gap(rng, options.settle_s) for _ in group[1:]]
        meta, sent = burst.request(preps, gaps, burst.settle(rng, options.settle_s))
        yield _Burst(group, preps, meta, sent, sum(h.nbytes for p in preps for h in p.outputs.values()))


def _case_row(op: Op, case: Case, outcomes: list[Outcome], trials: int, fault: str | None) -> VerifyRow:
    errs = [o.max_abs_err for o in outcomes if o.max_abs_err is not None]
    failures = [o for o in outcomes if not o.ok]
    failed = failures[0] if failures else None
    if failures and all(o.max_abs_err is not None for o in failures):  # the worst trial: its error is the row's
        failed = max(failures, key=lambda o: o.max_abs_err)
    if failed is not None:
        status, reason = Status.FAIL, failed.reason
    elif len(outcomes) < trials:
        status, reason = Status.FAIL, fault or "not all trials ran"
    else:
        status, reason = Status.PASS, ""
    return VerifyRow(
        slot=op.entry.slot,
        variant=op.entry.variant,
        dtype=case.dtype,
        shape=case.label,
        counts=list(case.counts),
        max_abs_err=max(errs) if errs else None,
        trials=len(outcomes),
        status=status,
        reason=reason,
    )


def _graphs(
    child: ChildSession,
    slot,
    op: Op,
    cases: list[Case],
    options: VerifyOptions,
    rng: random.Random,
    deadline: float,
    emit: OnRow,
) -> list[VerifyRow]:
    """CUDA-graph capture and replays with fresh inputs copied in and outputs re-poisoned before each replay."""
    rows = []
    for case in [c for c in cases if not c.drawn]:
        label = f"graph {case.label}"
        if not op.metadata.graph_safe:
            rows.append(op_row(op, Status.N_A, "op does not declare graph_safe", case.dtype, label))
            emit(rows[-1])
            continue
        replays = options.graph_replays
        graph_case = Case(
            case.index + 10_000,
            case.dtype,
            case.dims,
            (case.counts[0],) * replays,
            (case.pads[0],) * replays,
            input_pads=case.input_pads[:1] * replays,
        )
        first = prepare(slot, graph_case, 0, rng.getrandbits(63))
        captured = child.request("capture", first.meta, first.sent, deadline=deadline)
        if captured.kind != "captured":
            rows.append(
                op_row(op, Status.FAIL, f"graph capture failed: {reply_error(captured, 'captured')}", case.dtype, label)
            )
            emit(rows[-1])
            continue
        outcomes = []
        for replay in range(options.graph_replays):
            prep = prepare(slot, graph_case, replay, rng.getrandbits(63))
            size = sum(h.nbytes for h in prep.outputs.values())
            meta = {**prep.meta, "settle_s": burst.settle(rng, options.settle_s)}
            frame = child.request("replay", meta, prep.sent, deadline=deadline, max_payload=size)
            outcomes.append(judge(slot, case.dtype, prep, frame))
        rows.append(
            _case_row(op, graph_case, outcomes, options.graph_replays, None).model_copy(update={"shape": label})
        )
        emit(rows[-1])
    return rows
