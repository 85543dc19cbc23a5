"""Multi-rank verification of collective ops: N ranks in one sandbox (they share its private loopback), every rank
running the same candidate and variant on the validator's group, a descending-then-ascending burst of shapes per
dtype, and the fp32 reference computed here from the inputs the parent wrote. Any rank that raises, hangs, loads
something else or answers wrongly aborts the whole run with the reason; it passes only if every rank passes."""

from __future__ import annotations

import hashlib
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path

import torch
from pydantic import ValidationError

from ..bundle import Bundle, Op
from ..errors import InputError
from ..sandbox import JOIN_FAILED, Bind, SandboxPolicy, child_env, spawn
from ..slots import DTYPES, Role, get_slot
from ..verdict import Status
from .records import MAX_RANK_REPORT, CaseRow, CollectiveReport, RankReport

RANK = Path(__file__).with_name("rank.py")
WORK, TOOL = "/coll", "/hotfloat-collective"
BACKENDS = {"cpu": "gloo", "cuda": "nccl"}


def verify_collective(bundle: Bundle, *, world_size: int, device: str = "cpu", seed: int | None = None,
                      dtypes: list[str] | None = None, timeout_s: float = 60.0, startup_s: float = 180.0,
                      sandboxed: bool = True) -> CollectiveReport:
    """Verifies every collective op of `bundle` on `world_size` ranks; other ops are not this verifier's.

    `startup_s` bounds interpreter start, imports and joining the group; `timeout_s` the burst once all are ready."""
    if world_size < 2:
        raise InputError("a collective verification needs --world-size of at least 2")
    if device == "cuda" and torch.cuda.device_count() < world_size:
        raise InputError(f"NCCL with {world_size} ranks needs {world_size} GPUs; {torch.cuda.device_count()} visible")
    seed = secrets.randbits(62) if seed is None else seed
    ops = [op for op in bundle.ops if get_slot(op.entry.slot).of_role(Role.GROUP)]
    base = {"bundle_id": bundle.manifest.bundle_id, "identity": bundle.identity, "world_size": world_size,
            "backend": BACKENDS[device], "device": device, "seed": seed, "ops": [op.key for op in ops]}
    if not ops:
        return CollectiveReport(**base, status=Status.N_A, reasons=["no collective ops in the bundle"])
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
            return CollectiveReport(**base, status=status, reasons=reasons, rows=rows,
                                    seconds=time.monotonic() - started)
    status = Status.PASS if rows else Status.N_A
    return CollectiveReport(**base, status=status, reasons=reasons, rows=rows, seconds=time.monotonic() - started)


def burst(op: Op, dtypes: list[str], device: str) -> list[dict]:
    """Per dtype, the shapes largest to smallest then back up: a buffer kept from a bigger call shows up as wrong."""
    slot = get_slot(op.entry.slot)
    shapes = sorted((s.dims for s in slot.shapes if device == "cuda" or s.cpu), key=lambda d: d["T"] * d["H"], reverse=True)
    shapes = [d for d in shapes if op.metadata.max_num_tokens is None or d["T"] <= op.metadata.max_num_tokens]
    order = shapes + shapes[::-1][1:]
    return [{"dtype": dt, "T": d["T"], "H": d["H"]} for dt in dtypes for d in order]


def _inputs(slot, seed: int, case: int, rank: int, c: dict) -> torch.Tensor:
    """Rank `rank`'s input for case `case`: its own generator, seeded from the run's secret seed."""
    key = int.from_bytes(hashlib.sha256(f"{seed}:{case}:{rank}".encode()).digest()[:8], "big") >> 1
    return slot.make_inputs({"T": c["T"], "H": c["H"]}, DTYPES[c["dtype"]], torch.Generator().manual_seed(key))["x"]


def _run_op(bundle, op, dtypes, world, device, seed, timeout_s, startup_s, sandboxed) -> tuple[Status, str, list[CaseRow]]:
    cases = burst(op, dtypes, device)
    with tempfile.TemporaryDirectory(prefix="hotfloat-collective-") as tmp:
        work = Path(tmp)
        for rel, data in bundle.files.items():
            (work / "bundle" / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / "bundle" / rel).write_bytes(data)
        (work / "in").mkdir()
        (work / "out").mkdir()
        inputs = {}
        for i, c in enumerate(cases):
            for r in range(world):
                inputs[i, r] = _inputs(get_slot(op.entry.slot), seed, i, r, c)
                (work / "in" / f"r{r}_c{i}.bin").write_bytes(inputs[i, r].view(torch.uint8).numpy().tobytes())
        root = WORK if sandboxed else str(work)
        plan = {"world": world, "backend": BACKENDS[device], "device": device, "op": op.key, "identity": bundle.identity,
                "source": f"bundle/{op.entry.source}", "entry": op.entry.entry, "cases": cases,
                "init": f"file://{root}/rendezvous", "pg_timeout_s": max(5, int(timeout_s))}
        (work / "plan.json").write_text(json.dumps(plan))
        code = _launch(work, root, device, timeout_s, startup_s, sandboxed, world, len(cases))
        reports = _read_reports(work, world)
        fault = _fault(reports, world, len(cases), op.key, bundle.identity, code, timeout_s)
        if fault and any(isinstance(rep, str) for rep in reports.values()):
            fault += f"; last output: {_tail(work / 'log.txt')}"
        if fault:
            return (Status.NO_DECISION if code == JOIN_FAILED else Status.FAIL), f"aborted: {fault}", []
        rows = [_judge(get_slot(op.entry.slot), work, i, c, world, inputs) for i, c in enumerate(cases)]
        bad = [r for r in rows if r.status is not Status.PASS]
        why = f"case {bad[0].index} {bad[0].dtype} {bad[0].shape}: {bad[0].reason}" if bad else \
            f"{world} ranks x {len(cases)} cases matched the fp32 sum"
        return (Status.FAIL if bad else Status.PASS), why, rows


def _launch(work: Path, root: str, device: str, timeout_s: float, startup_s: float, sandboxed: bool,
            world: int, n_cases: int) -> int | None:
    """Exit code of the rank launcher, or None when killed: at `startup_s` if the ranks never all became ready (op
    imported, group joined), else `timeout_s` after they did."""
    policy = SandboxPolicy(gpu=device == "cuda", address_space_bytes=None if device == "cuda" else 16 << 30,
                           cpu_seconds=max(60, int(timeout_s) * 4))
    tool = TOOL if sandboxed else str(RANK.parent)
    binds = [Bind(work, WORK, writable=True), Bind(RANK.parent, TOOL)]
    env = child_env({"OMP_NUM_THREADS": "1"}, home=root)
    argv = [sys.executable, "-I", f"{tool}/{RANK.name}", root, "launch"]
    with open(work / "log.txt", "wb") as log:
        proc = spawn(argv, policy, sandboxed=sandboxed, binds=binds, env=env, cwd=str(work), stdout=log)
        try:
            deadline = time.monotonic() + startup_s
            ready = False
            while time.monotonic() < deadline:
                if proc.popen.poll() is not None:
                    return proc.popen.returncode
                reports = _read_reports(work, world)
                if _all(reports, lambda rep: rep.cases_done == n_cases):
                    return 0  # every rank answered every case; process-group teardown is not worth waiting for
                if not ready and _all(reports, lambda rep: rep.op is not None):
                    ready, deadline = True, time.monotonic() + timeout_s
                time.sleep(0.1)
            return None
        finally:
            proc.kill()


def _all(reports: dict, predicate) -> bool:
    return all(isinstance(rep, RankReport) and not rep.error and predicate(rep) for rep in reports.values())


def _read_reports(work: Path, world: int) -> dict[int, RankReport | str]:
    out: dict[int, RankReport | str] = {}
    for r in range(world):
        path = work / f"rank{r}.json"
        try:
            raw = path.read_bytes()[: MAX_RANK_REPORT + 1]
            if len(raw) > MAX_RANK_REPORT:
                raise ValueError("report too large")
            out[r] = RankReport.model_validate_json(raw)
        except FileNotFoundError:
            out[r] = "never started"
        except (ValidationError, ValueError) as e:
            out[r] = f"malformed report ({str(e).splitlines()[0][:120]})"
    return out


def _fault(reports: dict, world: int, n_cases: int, op: str, identity: str, code: int | None,
           timeout_s: float) -> str | None:
    """The first reason to abort the run: a bad report, a rank on another candidate or group, a raise, or a hang."""
    for r, rep in reports.items():
        if isinstance(rep, str):
            return f"rank {r}: {rep}" + (" (killed at its time limit)" if code is None else "")
        if rep.rank != r or rep.world != world or rep.identity != identity:
            return f"rank {r}: reports another rank, world or bundle (divergence)"
        if rep.op not in (None, op):
            return f"rank {r}: ran {rep.op}, not {op} (every rank must run the same candidate and variant)"
        if rep.group_size and rep.group_size != world:
            return f"rank {r}: the candidate received a group of {rep.group_size}, not the validator's {world}"
        if rep.error:
            return f"rank {r} raised: {rep.error}"
    if code == JOIN_FAILED:
        return "the sandbox could not join its cgroup"
    if code is None:
        progress = ", ".join(f"rank {r}: {rep.cases_done}/{n_cases} cases" for r, rep in reports.items())
        if any(rep.op is None for rep in reports.values()):
            return f"hang: the ranks never all got ready, killed at the start-up limit ({progress})"
        return f"hang: killed {timeout_s:g}s after all ranks were ready ({progress})"
    unfinished = [r for r, rep in reports.items() if rep.cases_done != n_cases or rep.op is None]
    if code != 0 or unfinished:
        return f"ranks {unfinished or list(reports)} did not complete (exit {code})"
    return None


def _tail(path: Path) -> str:
    lines = [ln for ln in path.read_bytes()[-4096:].decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "none"


def _judge(slot, work: Path, i: int, c: dict, world: int, inputs: dict) -> CaseRow:
    """Every rank's output against the fp32 sum; the bound scales with the summed magnitudes (rounding per add)."""
    dtype = DTYPES[c["dtype"]]
    tol = slot.tolerances[c["dtype"]]
    xs = torch.stack([inputs[i, r].float() for r in range(world)])
    expected, scale = xs.sum(0), xs.abs().sum(0)
    label, worst = f"T={c['T']},H={c['H']}", 0.0
    nbytes = c["T"] * c["H"] * dtype.itemsize
    for r in range(world):
        raw = (work / "out" / f"r{r}_c{i}.bin").read_bytes()
        if len(raw) != nbytes:
            return CaseRow(index=i, dtype=c["dtype"], shape=label, status=Status.FAIL, reason=f"rank {r}: wrong output size")
        got = torch.frombuffer(bytearray(raw), dtype=dtype).reshape(c["T"], c["H"]).float()
        if not torch.isfinite(got).all():
            return CaseRow(index=i, dtype=c["dtype"], shape=label, status=Status.FAIL,
                           reason=f"rank {r}: non-finite or unwritten output elements")
        err = (got - expected).abs()
        worst = max(worst, float(err.max()))
        if (err > tol.atol + tol.rtol * scale).any():
            return CaseRow(index=i, dtype=c["dtype"], shape=label, status=Status.FAIL, max_abs_err=worst,
                           reason=f"rank {r}: max error {float(err.max()):.3g} beyond atol={tol.atol:g} rtol={tol.rtol:g}")
    return CaseRow(index=i, dtype=c["dtype"], shape=label, status=Status.PASS, max_abs_err=worst)
