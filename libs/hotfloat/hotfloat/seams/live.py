"""The live serving tier: boot SGLang's offline Engine once per arm and prove the armed kernels run in the engine.

Arms: a null-armed reference, an exact-math bundle (must reproduce the reference's greedy output ids byte for byte),
broken bundles (must change them), and an armed plugin with a missing prerequisite (must refuse to boot). Activation
is silent by design, so the behavioural comparison plus each scheduler's seam report over the control channel (the
armed identity and its routed/stock counts, in the result file) is the honest detector; a routed count > 0 for the slots an arm covers proves the seam ran.
Each boot is a child (`python -m hotfloat_sglang.offline SPEC`) in its own session, killed as a group on timeout;
arms boot concurrently (one GPU holds several tiny engines), `parallel` at a time.
"""

from __future__ import annotations

import enum
import json
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..bundle import load_bundle
from ..errors import InfrastructureError
from ..verdict import Status

FATAL_MARK = "hotfloat seams: FATAL"
"""What the plugin prints before it ends an engine process that could not arm."""


class Expect(str, enum.Enum):
    """What an arm's output must show against the null-armed reference."""

    REFERENCE = "reference"
    EQUAL = "equal"
    DIFFER = "differ"
    BOOT_FAILS = "boot_fails"
    INFO = "info"
    """Reported (equal or not) but never failing: e.g. torch math against the engine's CUDA kernels."""


@dataclass(frozen=True)
class ArmSpec:
    """One boot: which bundle is armed (None: null-armed) and what it must show."""

    name: str
    bundle: str | None
    expect: Expect
    slots: tuple[str, ...] = ()
    """Slots whose routed count must be > 0 (for the reference: whose stock count must be > 0)."""


@dataclass(frozen=True)
class LiveConfig:
    """Everything one live run needs."""

    engine_python: str
    model_path: str
    arms: tuple[ArmSpec, ...]
    engine: dict = field(default_factory=dict)
    """sglang.Engine keyword arguments (model_path and port are added per arm)."""
    prompts: tuple[tuple[int, ...], ...] = ((1, 2, 3, 4, 5),)
    max_new_tokens: int = 16
    boot_timeout_s: float = 200.0
    """Per arm, from launch to the result file (boot + generate + shutdown)."""
    parallel: int = 8
    """How many arms boot at once, the reference in the first wave (1: one at a time, the reference first).
    Concurrent boots share the JIT caches safely: flashinfer and tvm-ffi build under file locks."""
    base_port: int = 31000
    command: tuple[str, ...] | None = None
    """Replaces `engine_python -m hotfloat_sglang.offline {spec}` (the CI stand-in); {spec} is substituted."""
    workdir: str | None = None
    """Keeps each arm's spec, log and result here (default: a temporary directory)."""


@dataclass(frozen=True)
class ArmResult:
    """One boot's outcome and its judgement against the reference."""

    name: str
    expect: Expect
    status: Status
    reason: str
    identity: str | None
    returncode: int | None
    output_ids: list | None
    reported: tuple[str | None, ...]
    routed: dict[str, int]
    stock: dict[str, int]
    boot_s: float | None
    wall_s: float
    log_tail: str = ""


@dataclass(frozen=True)
class LiveResult:
    status: Status
    reason: str
    arms: tuple[ArmResult, ...]


def preflight(cfg: LiveConfig) -> None:
    """Raises on the first missing prerequisite, so an armed run fails loudly instead of skipping."""
    if not cfg.model_path or not Path(cfg.model_path).exists():
        raise InfrastructureError(f"model path {cfg.model_path!r} does not exist")
    if cfg.command is None and not Path(cfg.engine_python).exists():
        raise InfrastructureError(f"engine interpreter {cfg.engine_python} does not exist")
    refs = [a for a in cfg.arms if a.expect is Expect.REFERENCE]
    if len(refs) != 1 or refs[0].bundle is not None:
        raise InfrastructureError("the live tier needs exactly one null-armed reference arm")
    if len({a.name for a in cfg.arms}) != len(cfg.arms):
        raise InfrastructureError("arm names must be distinct")
    for arm in cfg.arms:
        if arm.bundle and arm.expect is not Expect.BOOT_FAILS:
            load_bundle(arm.bundle)


def run_live(cfg: LiveConfig) -> LiveResult:
    """Boots the arms `parallel` at a time (the reference in the first wave) and judges each against the reference."""
    preflight(cfg)
    with tempfile.TemporaryDirectory(prefix="hotfloat-live-") as tmp:
        work = Path(cfg.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        ports = {a.name: cfg.base_port + 100 * i for i, a in enumerate(cfg.arms)}
        ref = next(a for a in cfg.arms if a.expect is Expect.REFERENCE)
        order, n = [ref] + [a for a in cfg.arms if a is not ref], max(1, cfg.parallel)
        waves = [order[i : i + n] for i in range(0, len(order), n)]
        raw = {}
        for wave in waves:
            raw.update(_boot_all(cfg, wave, work, ports))
        ref_result = _judge(ref, raw[ref.name], None)
        results = [ref_result if a is ref else _judge(a, raw[a.name], ref_result) for a in cfg.arms]
    failed = [r for r in results if r.status is not Status.PASS]
    if failed:
        return LiveResult(Status.FAIL, "; ".join(f"{r.name}: {r.reason}" for r in failed), tuple(results))
    shown = sorted({a.expect.value for a in cfg.arms} - {Expect.REFERENCE.value})
    return LiveResult(
        Status.PASS,
        f"every arm showed what it must against the null-armed reference ({', '.join(shown)}), "
        "with its armed slots routed",
        tuple(results),
    )


@dataclass
class _Boot:
    arm: ArmSpec
    identity: str | None
    dir: Path
    proc: subprocess.Popen | None = None
    started: float = 0.0
    wall_s: float = 0.0
    timed_out: bool = False


def _boot_all(cfg: LiveConfig, arms: list[ArmSpec], work: Path, ports: dict[str, int]) -> dict[str, _Boot]:
    """Starts the arms' children at once, waits for each within its timeout, ends every process group."""
    boots = {a.name: _start(cfg, a, work / a.name, ports[a.name]) for a in arms}
    try:
        while any(b.proc.poll() is None for b in boots.values()):
            for b in boots.values():
                if b.proc.poll() is None and time.monotonic() - b.started > cfg.boot_timeout_s:
                    b.timed_out = True
                    _end_groups([b.proc])
                if b.proc.poll() is not None and not b.wall_s:
                    b.wall_s = time.monotonic() - b.started
            time.sleep(0.2)
    finally:
        _end_groups([b.proc for b in boots.values()])
        for b in boots.values():
            b.wall_s = b.wall_s or time.monotonic() - b.started
    return boots


def _start(cfg: LiveConfig, arm: ArmSpec, d: Path, port: int) -> _Boot:
    d.mkdir(parents=True, exist_ok=True)
    identity = None
    if arm.bundle and arm.expect is not Expect.BOOT_FAILS:
        identity = load_bundle(arm.bundle).identity
    spec = {
        "model_path": cfg.model_path,
        "engine": {**cfg.engine, "port": port},
        "prompts": [list(p) for p in cfg.prompts],
        "sampling": {"max_new_tokens": cfg.max_new_tokens, "temperature": 0, "ignore_eos": True},
        "result_path": str(d / "result.json"),
    }
    (d / "spec.json").write_text(json.dumps(spec, indent=1))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOTFLOAT_ARMED_")}
    env.update(HOTFLOAT_SEAMS="1", SGLANG_PLUGINS="hotfloat")
    if arm.bundle:
        env["HOTFLOAT_ARMED_BUNDLE"] = str(Path(arm.bundle).resolve())
    if identity:
        env["HOTFLOAT_ARMED_IDENTITY"] = identity
    cmd = (
        [c.format(spec=d / "spec.json") for c in cfg.command]
        if cfg.command is not None
        else [cfg.engine_python, "-m", "hotfloat_sglang.offline", str(d / "spec.json")]
    )
    boot = _Boot(arm, identity, d, started=time.monotonic())
    with open(d / "engine.log", "wb") as log:
        boot.proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    return boot


def _end_groups(procs: list[subprocess.Popen], grace_s: float = 5.0) -> None:
    """Ends each child's whole session (SGLang's scheduler and detokenizer too): SIGTERM, then SIGKILL after grace."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [p for p in procs if _signal_group(p, sig)]
        deadline = time.monotonic() + grace_s
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if _signal_group(p, 0)]
            time.sleep(0.1)
            for p in procs:
                p.poll()
        if not alive:
            break
    for p in procs:
        p.wait()


def _signal_group(proc: subprocess.Popen, sig: int) -> bool:
    """Sends sig to the child's process group; False once no process of the group is left."""
    proc.poll()  # reap the leader so a zombie does not keep the group alive
    try:
        os.killpg(proc.pid, sig)
        return True
    except ProcessLookupError:
        return False


def _judge(arm: ArmSpec, boot: _Boot, ref: ArmResult | None) -> ArmResult:
    log = (boot.dir / "engine.log").read_text(errors="replace")
    tail = "\n".join(log.strip().splitlines()[-8:])
    result_path = boot.dir / "result.json"
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    reports = result.get("reports", []) if result else []
    routed: dict[str, int] = {}
    stock: dict[str, int] = {}
    for r in reports:
        for slot, c in r["counts"].items():
            routed[slot] = routed.get(slot, 0) + c["routed"]
            stock[slot] = stock.get(slot, 0) + c["stock"]

    def done(status: Status, reason: str) -> ArmResult:
        return ArmResult(
            arm.name,
            arm.expect,
            status,
            reason,
            boot.identity,
            boot.proc.returncode,
            result["output_ids"] if result else None,
            tuple(r["identity"] for r in reports),
            routed,
            stock,
            result.get("boot_s") if result else None,
            round(boot.wall_s, 1),
            tail,
        )

    if arm.expect is Expect.BOOT_FAILS:
        if result is not None or boot.proc.returncode == 0:
            return done(Status.FAIL, "the engine booted and served although its armed bundle could not load")
        if FATAL_MARK not in log:
            why = "timed out" if boot.timed_out else f"exit {boot.proc.returncode}"
            return done(Status.FAIL, f"the boot failed ({why}) but not through the plugin's refusal")
        return done(Status.PASS, "refused to boot: " + next(ln for ln in log.splitlines() if FATAL_MARK in ln).strip())
    if boot.timed_out:
        return done(Status.FAIL, f"no result within {boot.wall_s:.0f} s (process group killed)")
    if result is None or boot.proc.returncode != 0:
        return done(Status.FAIL, f"the engine exited {boot.proc.returncode} without a result: {tail[-300:]}")
    if not reports or set(r["identity"] for r in reports) != {boot.identity}:
        return done(
            Status.FAIL,
            f"engine processes reported arming {[r['identity'] for r in reports]}, "
            f"expected {boot.identity} (is the plugin installed?)",
        )
    if arm.expect is Expect.REFERENCE:
        if any(routed.values()):
            return done(Status.FAIL, f"null-armed, yet calls were routed: {routed}")
        idle = [s for s in arm.slots if not stock.get(s)]
        if idle:
            return done(Status.FAIL, f"no stock calls counted for {idle}: the hooks did not see the layers")
        return done(Status.PASS, f"{len(reports)} process report(s), stock calls {stock}")
    idle = [s for s in arm.slots if not routed.get(s)]
    if idle:
        return done(Status.FAIL, f"no call of {idle} was routed to the bundle: the seam did not run")
    if ref is None or ref.output_ids is None:
        return done(Status.FAIL, "no reference output to compare with")
    same = json.dumps(result["output_ids"]) == json.dumps(ref.output_ids)
    if arm.expect is Expect.EQUAL and not same:
        return done(Status.FAIL, "the exact-math bundle changed the greedy output ids")
    if arm.expect is Expect.DIFFER and same:
        return done(Status.FAIL, "the broken bundle left the output ids unchanged: the seam is not active")
    verb = "identical to" if same else "different from"
    return done(Status.PASS, f"output ids {verb} the reference; routed {routed}")
