"""verify_bundle: runs each op in its own sandboxed child and turns every observation into verdict rows.

Gates run in the validator's order: the bundle contract (already held by a loaded Bundle), scan's policy, then
running. The parent never imports candidate code: it draws inputs, computes the fp32 reference, sends bytes, and
judges the bytes that come back. A fault the candidate can cause (hang, crash, garbage) fails its op; a fault before
any candidate code ran (the sandbox or interpreter would not start) raises InfrastructureError.
"""

from __future__ import annotations

import logging
import random
import secrets
import subprocess
import sys
import time
from collections.abc import Callable

import torch

from ..bundle import Bundle, Op
from ..errors import InfrastructureError
from ..scan import scan_bundle
from ..slots import Role, get_slot
from ..verdict import Status
from . import burst
from .check import Outcome, judge, reply_error
from .launcher import ChildFault, ChildSession
from .plan import Case, make_cases, prepare, schedule
from .records import VerifyOptions, VerifyReport, VerifyRow

log = logging.getLogger("hotfloat.verify")


OnRow = Callable[[VerifyRow], None]


def verify_bundle(bundle: Bundle, options: VerifyOptions, on_row: OnRow | None = None) -> VerifyReport:
    """Verifies every op of `bundle` that applies to the device; the report carries the seed for replay.

    `on_row` is called once per row of the report, as soon as that row is final (progress for a CLI)."""
    started = time.monotonic()
    seed = options.seed if options.seed is not None else secrets.randbits(63)
    arch = device_arch(options.device)
    emit = on_row or (lambda row: None)
    rows: list[VerifyRow] = scan_rows(bundle, emit) if options.scan else []
    bounds: set[str] = set()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small tensors: a second thread only adds barrier waits, and the child needs the core
    try:
        for index, op in enumerate(bundle.ops if not rows else ()):
            rng = random.Random(f"{seed}:{index}:{op.key}")
            op_rows, op_bounds = _verify_op(bundle, op, options, arch, rng, emit)
            rows += op_rows
            bounds |= op_bounds
    finally:
        torch.set_num_threads(threads)
    return VerifyReport(bundle_id=bundle.manifest.bundle_id, identity=bundle.identity, seed=seed,
                        device=options.device, arch=arch, sandboxed=options.sandboxed, bounds=sorted(bounds),
                        rows=rows, seconds=round(time.monotonic() - started, 3), env=_environment())


def device_arch(device: str) -> str:
    """cpu, or the GPU's sm_XX asked of a trusted subprocess so this process never creates a CUDA context."""
    if device == "cpu":
        return "cpu"
    probe = "import torch; assert torch.cuda.is_available(); print('sm_%d%d' % torch.cuda.get_device_capability())"
    try:
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InfrastructureError(f"cannot query the CUDA device: {e}") from None
    if r.returncode != 0:
        raise InfrastructureError("no usable CUDA device (torch.cuda.is_available() is false)")
    return r.stdout.strip()


def scan_rows(bundle: Bundle, emit: OnRow) -> list[VerifyRow]:
    """One FAIL row per op when scan refuses the bundle (nothing then runs), else none. Like the validator, a finding
    anywhere refuses the whole bundle; each op's row names its own findings first."""
    report = scan_bundle(bundle)
    if report.clean:
        return []
    every = [f for o in report.ops for f in o.findings]
    rows = []
    for op in bundle.ops:
        own = next((o.findings for o in report.ops if o.op == op.key), [])
        named = own + [f for f in every if f not in own]
        more = f" (+{len(named) - 3} more)" if len(named) > 3 else ""
        rows.append(_row(op, Status.FAIL, f"scan refused the bundle: {'; '.join(named[:3])}{more}"))
        emit(rows[-1])
    return rows


def applies(op: Op, arch: str) -> bool:
    """An op runs where its manifest says: cpu, or the device's sm_XX (an sm_90a build runs on sm_90)."""
    archs = set(op.entry.architectures)
    return arch in archs or f"{arch}a" in archs


def _row(op: Op, status: Status, reason: str, dtype: str = "-", shape: str = "-") -> VerifyRow:
    return VerifyRow(slot=op.entry.slot, variant=op.entry.variant, dtype=dtype, shape=shape, status=status,
                     reason=reason)


def _verify_op(bundle: Bundle, op: Op, options: VerifyOptions, arch: str, rng: random.Random,
               emit: OnRow) -> tuple[list[VerifyRow], set[str]]:
    slot = get_slot(op.entry.slot)
    early = _not_applicable(op, slot, options, arch)
    if early:
        emit(early)
        return [early], set()
    dtypes = [d for d in op.dtypes if options.dtypes is None or d in options.dtypes]
    cases = make_cases(slot, op, dtypes, options.device, rng, options.trials, options.max_shapes,
                       options.cpu_max_elements)
    calls = schedule(cases, options.trials, rng)
    results: dict[int, list[Outcome]] = {c.index: [] for c in cases}
    final: dict[int, VerifyRow] = {}
    fault: str | None = None
    graph_rows: list[VerifyRow] = []
    tensors = sum(1 for a in slot.args if a.role in (Role.INPUT, Role.OUTPUT))
    with ChildSession(bundle.files, device=options.device, sandboxed=options.sandboxed,
                      policy=options.sandbox_policy(), label=bundle.identity[:16]) as child:
        child.start(options.startup_timeout_s)
        deadline = time.monotonic() + options.timeout_s
        try:
            loaded = child.request("load", {"source": op.entry.source, "entry": op.entry.entry,
                                            "root": child.bundle_root, "identity": bundle.identity},
                                   deadline=deadline)
            if loaded.kind != "loaded":  # one row for the op: every case would repeat the same reason
                row = _row(op, Status.FAIL, f"loading the op failed: {reply_error(loaded, 'loaded')}")
                emit(row)
                return [row], set(child.bounds)
            for group in burst.group(calls, rng, tensors):
                preps = [prepare(slot, c.case, c.trial, c.seed) for c in group]
                gaps = [burst.gap(rng, options.settle_s) for _ in group[1:]]
                meta, sent = burst.request(preps, gaps, burst.settle(rng, options.settle_s))
                size = sum(h.nbytes for p in preps for h in p.outputs.values())
                frame = child.request("call", meta, sent, deadline=deadline, max_payload=size)
                for call, prep, reply in zip(group, preps, burst.split(frame, len(group)), strict=False):
                    results[call.case.index].append(judge(slot, call.case.dtype, prep, reply))
                    if len(results[call.case.index]) == options.trials:
                        final[call.case.index] = _case_row(op, call.case, results[call.case.index], options.trials, None)
                        emit(final[call.case.index])
            if fault is None and options.device == "cuda":
                graph_rows = _graphs(child, slot, op, cases, options, rng, deadline, emit)
        except ChildFault as e:
            fault = str(e)
        bounds = set(child.bounds)
    for c in cases:
        if c.index not in final:
            final[c.index] = _case_row(op, c, results[c.index], options.trials, fault)
            emit(final[c.index])
    return [final[c.index] for c in cases] + graph_rows, bounds


def _not_applicable(op: Op, slot, options: VerifyOptions, arch: str) -> VerifyRow | None:
    """The N/A row when this verifier does not run the op here, else None."""
    if not applies(op, arch):
        hint = '; add "cpu" to its architectures to verify it here' if arch == "cpu" and op.entry.kind == "python" else ""
        return _row(op, Status.N_A, f"not built for {arch} (architectures: {', '.join(op.entry.architectures)}){hint}")
    if op.entry.kind != "python":
        return _row(op, Status.N_A, f"ahead-of-time {op.entry.kind} kernel: verified on the native admission path "
                                    "(hotfloat build / admit)")
    if slot.of_role(Role.GROUP):
        return _row(op, Status.N_A, f"needs a process group: verify with --world-size {slot.world_size}")
    if not [d for d in op.dtypes if options.dtypes is None or d in options.dtypes]:
        return _row(op, Status.N_A, f"no requested dtype among the op's {op.dtypes}")
    return None


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
    return VerifyRow(slot=op.entry.slot, variant=op.entry.variant, dtype=case.dtype, shape=case.label,
                     counts=list(case.counts), max_abs_err=max(errs) if errs else None, trials=len(outcomes),
                     status=status, reason=reason)


def _graphs(child: ChildSession, slot, op: Op, cases: list[Case], options: VerifyOptions, rng: random.Random,
            deadline: float, emit: OnRow) -> list[VerifyRow]:
    """CUDA-graph capture and replays with fresh inputs copied in and outputs re-poisoned before each replay."""
    rows = []
    for case in [c for c in cases if not c.drawn]:
        label = f"graph {case.label}"
        if not op.metadata.graph_safe:
            rows.append(_row(op, Status.N_A, "op does not declare graph_safe", case.dtype, label))
            emit(rows[-1])
            continue
        replays = options.graph_replays
        graph_case = Case(case.index + 10_000, case.dtype, case.dims, (case.counts[0],) * replays,
                          (case.pads[0],) * replays, input_pads=case.input_pads[:1] * replays)
        first = prepare(slot, graph_case, 0, rng.getrandbits(63))
        captured = child.request("capture", first.meta, first.sent, deadline=deadline)
        if captured.kind != "captured":
            rows.append(_row(op, Status.FAIL, f"graph capture failed: {reply_error(captured, 'captured')}",
                             case.dtype, label))
            emit(rows[-1])
            continue
        outcomes = []
        for replay in range(options.graph_replays):
            prep = prepare(slot, graph_case, replay, rng.getrandbits(63))
            size = sum(h.nbytes for h in prep.outputs.values())
            meta = {**prep.meta, "settle_s": burst.settle(rng, options.settle_s)}
            frame = child.request("replay", meta, prep.sent, deadline=deadline, max_payload=size)
            outcomes.append(judge(slot, case.dtype, prep, frame))
        rows.append(_case_row(op, graph_case, outcomes, options.graph_replays, None).model_copy(update={"shape": label}))
        emit(rows[-1])
    return rows


def _environment() -> dict | None:
    """The environment identity from hotfloat.env when that module exists (it is built separately)."""
    try:
        from ..env import collect
    except ImportError:
        return None
    return collect().model_dump(mode="json")
