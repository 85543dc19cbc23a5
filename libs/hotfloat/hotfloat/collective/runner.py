"""Multi-rank verification of collective ops: N ranks in one sandbox (they share its private loopback), every rank
running the same candidate and variant on the validator's group, a descending-then-ascending burst of shapes per
dtype (token counts jittered and one shape drawn over the slot's whole range, all from the secret), and the fp32
reference computed here. Each rank gets its own pipes: a case's input reaches a rank only when that case is due, so
there is no directory of everyone's inputs to read instead of communicating. Every rank's reply is judged like a
single-op call (poisoned output fully written, input and output identity unchanged, no deferred writes, every element
within tolerance); on CUDA the op is also captured in a CUDA graph and replayed with fresh inputs. Any rank that
raises, hangs, loads something else or answers wrongly aborts the whole run with the reason."""

from __future__ import annotations

import hashlib
import json
import random
import secrets
import tempfile
import time
from pathlib import Path

import torch
from pydantic import ValidationError

from ..bundle import Bundle
from ..errors import InputError, no_gpu
from ..scan import scan_bundle
from ..slots import Role, get_slot
from ..slots.collective import stack_ranks
from ..verdict import Status
from ..verify import burst as timing
from ..verify import wire
from ..verify.check import Outcome, judge
from ..verify.inputs import Prepared, prepare
from ..verify.plan import Case
from .cases import burst, case_dims, case_label
from .launcher import CODEC, CODEC_DIR, WORK, Abort, Ranks, launch
from .records import CaseRow, CollectiveReport, RankReport

BACKENDS = {"cpu": "gloo", "cuda": "nccl"}
SETTLE_S = 0.02
GRAPH_REPLAYS = 3


def verify_collective(
    bundle: Bundle,
    *,
    world_size: int,
    device: str = "cpu",
    seed: int | None = None,
    dtypes: list[str] | None = None,
    timeout_s: float = 60.0,
    startup_s: float = 180.0,
    sandboxed: bool = True,
    scan: bool = True,
) -> CollectiveReport:
    """Verifies every collective op of `bundle` on `world_size` ranks; other ops are not this verifier's.

    Scan's policy gates first, as in the validator. `startup_s` bounds interpreter start, imports and joining the
    group; `timeout_s` the burst once all are ready."""
    if world_size < 2:
        raise InputError("a collective verification needs --world-size of at least 2")
    if device == "cuda" and not torch.cuda.is_available():
        raise no_gpu(f"verify --world-size {world_size}")
    if device == "cuda" and torch.cuda.device_count() < world_size:
        raise InputError(f"NCCL with {world_size} ranks needs {world_size} GPUs; {torch.cuda.device_count()} visible")
    seed = secrets.randbits(62) if seed is None else seed
    ops = [op for op in bundle.ops if get_slot(op.entry.slot).of_role(Role.GROUP)]
    base = {
        "bundle_id": bundle.manifest.bundle_id,
        "identity": bundle.identity,
        "world_size": world_size,
        "backend": BACKENDS[device],
        "device": device,
        "seed": seed,
        "sandboxed": sandboxed,
        "ops": [op.key for op in ops],
    }
    if not ops:
        return CollectiveReport(**base, status=Status.N_A, reasons=["no collective ops in the bundle"])
    if scan and not (report := scan_bundle(bundle)).clean:
        findings = [f for o in report.ops for f in o.findings]
        return CollectiveReport(**base, status=Status.FAIL, reasons=[f"scan refused the bundle: {f}" for f in findings])
    started, rows, reasons = time.monotonic(), [], []
    for op in ops:
        op_dtypes = [d for d in op.dtypes if dtypes is None or d in dtypes]
        if not op_dtypes:
            reasons.append(f"{op.key}: no requested dtype among {op.dtypes}")
            continue
        status, why, op_rows = _run_op(bundle, op, op_dtypes, world_size, device, seed, timeout_s, startup_s, sandboxed)
        rows += op_rows
        reasons.append(f"{op.key}: {why}")
        if status is not Status.PASS:
            return CollectiveReport(
                **base, status=status, reasons=reasons, rows=rows, seconds=time.monotonic() - started
            )
    status = Status.PASS if rows else Status.N_A
    return CollectiveReport(**base, status=status, reasons=reasons, rows=rows, seconds=time.monotonic() - started)


def _prepare(slot, i: int, c: dict, world: int, seed: int, settle_s: float) -> list[Prepared]:
    """Every rank's call for case `i`: its own inputs (its own generator from the secret) and poisoned outputs, the
    replicated inputs rank 0's on every rank, and the reference over all ranks' inputs as every rank's expected
    outputs, with the slot's rounding scale for the tolerance."""
    dims = case_dims(c)
    case = Case(i, c["dtype"], dims, (dims[slot.count_dim],), (0,))
    preps = []
    for r in range(world):
        key = int.from_bytes(hashlib.sha256(f"{seed}:{i}:{r}".encode()).digest()[:8], "big") >> 1
        prep = prepare(slot, case, 0, key, expect=False)
        prep.meta["settle_s"] = settle_s
        preps.append(prep)
    shared = {h.name: (h, data) for h, data in preps[0].sent if h.name in slot.replicated}
    for p in preps[1:]:
        p.sent = [shared.get(h.name, (h, data)) for h, data in p.sent]
        p.inputs |= {n: preps[0].inputs[n] for n in shared}
    scalars = {a["name"]: a["value"] for a in preps[0].meta["args"] if a["kind"] == "scalar"}
    ranked = stack_ranks(slot, [p.inputs | scalars for p in preps])
    expected, scales = slot.expect(ranked)
    for p in preps:
        p.expected, p.scales = expected, scales
    return preps


def _run_op(
    bundle, op, dtypes, world, device, seed, timeout_s, startup_s, sandboxed
) -> tuple[Status, str, list[CaseRow]]:
    slot = get_slot(op.entry.slot)
    rng = random.Random(f"{seed}:{op.key}")
    cases = burst(op, dtypes, device, rng)
    ranks = Ranks(world)
    rows: list[CaseRow] = []
    with tempfile.TemporaryDirectory(prefix="hotfloat-collective-") as tmp:
        work = Path(tmp)
        for rel, data in bundle.files.items():
            (work / "bundle" / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / "bundle" / rel).write_bytes(data)
        root = WORK if sandboxed else str(work)
        plan = {
            "world": world,
            "backend": BACKENDS[device],
            "device": device,
            "op": op.key,
            "identity": bundle.identity,
            "source": op.entry.source,
            "entry": op.entry.entry,
            "fds": ranks.rank_fds,
            "codec": CODEC_DIR if sandboxed else str(CODEC.parent),
            "init": f"file://{root}/rendezvous",
            "pg_timeout_s": max(5, int(timeout_s)),
        }
        (work / "plan.json").write_text(json.dumps(plan))
        try:
            ranks.proc = launch(work, root, device, timeout_s, sandboxed, ranks.rank_fds)
            ranks.drop_rank_ends()
            _hello(ranks, world, op.key, bundle.identity, time.monotonic() + startup_s)
            deadline = time.monotonic() + timeout_s
            for i, c in enumerate(cases):
                rows.append(_call(ranks, slot, i, c, world, seed, rng, deadline, i, len(cases)))
                if rows[-1].status is not Status.PASS:
                    return Status.FAIL, f"case {i} {c['dtype']} {rows[-1].shape}: {rows[-1].reason}", rows
            if device == "cuda":
                rows += _graphs(ranks, slot, cases, world, seed, rng, deadline)
                bad = [r for r in rows if r.status is not Status.PASS]
                if bad:
                    return Status.FAIL, f"{bad[0].shape}: {bad[0].reason}", rows
        except Abort as e:
            return (Status.NO_DECISION if e.infrastructure else Status.FAIL), f"aborted: {e}", rows
        finally:
            ranks.close()
    return Status.PASS, f"{world} ranks x {len(rows)} cases matched the fp32 reference", rows


def _hello(ranks: Ranks, world: int, op: str, identity: str, deadline: float) -> None:
    """Every rank joined the group and imported the same candidate before the start-up limit."""
    try:
        hellos = ranks.collect({"hello"}, 0, deadline)
    except TimeoutError as e:
        raise Abort(f"hang: ranks {e.args[0]} never got ready, killed at the start-up limit") from None
    for r, frame in sorted(hellos.items()):
        try:
            rep = RankReport.model_validate(frame.meta)
        except ValidationError as e:
            raise Abort(f"rank {r}: malformed hello ({str(e).splitlines()[0][:120]})") from None
        if rep.rank != r or rep.world != world or rep.identity != identity:
            raise Abort(f"rank {r}: reports another rank, world or bundle (divergence)")
        if rep.op != op:
            raise Abort(f"rank {r}: ran {rep.op}, not {op} (every rank must run the same candidate and variant)")
        if rep.group_size != world:
            raise Abort(f"rank {r}: the candidate received a group of {rep.group_size}, not the validator's {world}")


def _call(
    ranks: Ranks,
    slot,
    i: int,
    c: dict,
    world: int,
    seed: int,
    rng: random.Random,
    deadline: float,
    done: int,
    total: int,
    kind: str = "call",
    label: str = "",
) -> CaseRow:
    """Delivers case `i` to every rank (only now), collects every reply and judges each like a single-op call."""
    preps = _prepare(slot, i, c, world, seed, timing.settle(rng, SETTLE_S))
    try:
        for r, prep in enumerate(preps):
            ranks.send(r, kind, prep.meta, prep.sent, deadline)
        size = sum(h.nbytes for h in preps[0].outputs.values())
        frames = ranks.collect({"result"}, size, deadline)
    except TimeoutError as e:
        who = f"ranks {e.args[0]}" if e.args and isinstance(e.args[0], list) else "the ranks"
        raise Abort(f"hang: {who} gave no answer to case {done} of {total}, killed at the time limit") from None
    except wire.ProtocolError as e:
        raise Abort(f"a rank stopped reading its channel: {ranks.died() or e}") from None
    outcomes = {r: judge(slot, c["dtype"], preps[r], frames[r]) for r in range(world)}
    return _row(i, c, outcomes, label)


def _row(i: int, c: dict, outcomes: dict[int, Outcome], label: str) -> CaseRow:
    shape = label or case_label(c)
    errs = [o.max_abs_err for o in outcomes.values() if o.max_abs_err is not None]
    worst = max(errs) if errs else None
    bad = next(((r, o) for r, o in sorted(outcomes.items()) if not o.ok), None)
    if bad:
        return CaseRow(
            index=i,
            dtype=c["dtype"],
            shape=shape,
            status=Status.FAIL,
            max_abs_err=worst,
            reason=f"rank {bad[0]}: {bad[1].reason}",
        )
    return CaseRow(index=i, dtype=c["dtype"], shape=shape, status=Status.PASS, max_abs_err=worst)


def _graphs(
    ranks: Ranks, slot, cases: list[dict], world: int, seed: int, rng: random.Random, deadline: float
) -> list[CaseRow]:
    """Per dtype, the first shape captured in a CUDA graph on every rank and replayed with fresh inputs copied in."""
    rows = []
    firsts = {c["dtype"]: c for c in reversed(cases)}
    for n, c in enumerate(firsts.values()):
        index = 10_000 + 100 * n
        preps = _prepare(slot, index, c, world, seed, 0.0)
        try:
            for r, prep in enumerate(preps):
                ranks.send(r, "capture", prep.meta, prep.sent, deadline)
            ranks.collect({"captured"}, 0, deadline)
        except TimeoutError:
            raise Abort(f"hang: graph capture of {case_label(c)} gave no answer by the time limit") from None
        except Abort as e:
            rows.append(
                CaseRow(
                    index=index,
                    dtype=c["dtype"],
                    shape=f"graph {case_label(c)}",
                    status=Status.FAIL,
                    reason=f"graph capture failed: {e}",
                )
            )
            continue
        for replay in range(GRAPH_REPLAYS):
            rows.append(
                _call(
                    ranks,
                    slot,
                    index + 1 + replay,
                    c,
                    world,
                    seed,
                    rng,
                    deadline,
                    replay,
                    GRAPH_REPLAYS,
                    kind="replay",
                    label=f"graph {case_label(c)}",
                )
            )
    return rows
