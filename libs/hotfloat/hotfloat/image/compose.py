"""The services as containers (`make up`, one qualification service per GPU with `GPUS=N`), and the miner's check
inside the compiler image (`make miner`)."""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import ExitCode, HotfloatError, InfrastructureError, InputError
from ..admission.scope import QUICK_ADMISSION
from ..verdict import Status
from . import runtime
from .oci import Layout
from .runtime import Container, Mount

EXIT_STATUS = {
    ExitCode.OK: Status.PASS,
    ExitCode.FAIL: Status.FAIL,
    ExitCode.NOT_APPLICABLE: Status.N_A,
    ExitCode.NO_DECISION: Status.NO_DECISION,
}
"""A stage's verdict from the `hotfloat` command's exit code (the one exit-code table); any other code is
infrastructure, NO_DECISION."""

STATE = Path("out/run")
"""Host folder for the shared socket directory, the validator's ledger, and container logs."""
SOCKETS_INSIDE = "/run/hotfloat"
_READY_S = 180.0
GPU_LIMITS = {"memory_bytes": 96 << 30, "pids": 32768}
"""A GPU container's bounds: a qualification's engine processes and threads (memory as its Kubernetes pod requests)."""


@dataclass(frozen=True)
class Service:
    """One container `up` starts."""

    name: str
    image: str
    socket: str | None = None
    """The socket it serves in the shared folder; None for the validator, which dials them."""
    network: bool = False
    argv: tuple[str, ...] = ()
    """The command, when not the image's entrypoint."""
    extra: tuple[str, ...] = ()
    """Options after the image's entrypoint."""
    gpu: bool = False


def services(gpus: int = 0, *, quick: bool = False, admission_gpu: int | None = None) -> list[Service]:
    """Compiler, admission (on CPU, or on `admission_gpu` with --device cuda), then with `gpus` one qualification
    service per GPU 0..gpus-1 (the worker image's cuda flavour, each pinned with --gpu i on its own socket, so no two
    A/Bs share a GPU), and the validator dialling every one."""
    if admission_gpu is not None and admission_gpu < gpus:
        raise InputError(
            f"admission on GPU {admission_gpu} would share it with a timed qualification (GPUs 0-{gpus - 1})"
        )
    token = f"{SOCKETS_INSIDE}/token"
    on_gpu = () if admission_gpu is None else ("--device", "cuda", "--gpu", str(admission_gpu))
    qualifiers = [
        Service(
            f"hotfloat-qualification-{i}",
            "worker",
            f"qualification-{i}.sock",
            gpu=True,
            argv=(
                "hotfloat",
                "serve",
                "qualification",
                "--socket",
                f"{SOCKETS_INSIDE}/qualification-{i}.sock",
                "--token-file",
                token,
                "--device",
                "cuda",
                "--gpu",
                str(i),
            ),
        )
        for i in range(gpus)
    ]
    dial = tuple(a for q in qualifiers for a in ("--qualification", f"{SOCKETS_INSIDE}/{q.socket}"))
    return [
        Service("hotfloat-compiler", "compiler", "compiler.sock"),
        Service(
            "hotfloat-admission",
            "worker",
            "admission.sock",
            gpu=bool(on_gpu),
            extra=(*(QUICK_ADMISSION.flags() if quick else ()), *on_gpu),
        ),
        *qualifiers,
        Service("hotfloat-validator", "validator", network=True, extra=dial),
    ]


def _owned_dir(path: Path, uid: int) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chown(path, uid, uid)
    return path


def _image_user(layout: Path) -> int:
    return int(str((Layout(layout).config().get("config") or {}).get("User", "10001")).split(":")[0])


def up(
    images: Path, state: Path, *, quick: bool = False, gpus: int = 0, admission_gpu: int | None = None
) -> list[dict]:
    """Starts the services in dependency order and waits until each socket answers; returns what runs where."""
    uid = _image_user(images / "compiler")
    sockets = _owned_dir(state / "sockets", uid)
    work = _owned_dir(state / "validator", uid)
    token = sockets / "token"
    if not token.exists():
        token.write_text(secrets.token_hex(32))
        os.chown(token, uid, uid)
        token.chmod(0o400)
    started = []
    plan = services(gpus, quick=quick, admission_gpu=admission_gpu)
    (state / "containers.json").write_text(json.dumps([s.name for s in plan]))
    for s in plan:
        mounts = (Mount(sockets, SOCKETS_INSIDE, readonly=False),) + (
            (Mount(work, "/work", readonly=False),) if s.network else ()
        )
        layout = Layout(images / s.image)
        digest = layout.manifest_digest()
        args = s.argv or ((*layout.config()["config"]["Entrypoint"], *s.extra) if s.extra else ())
        container = Container(
            name=s.name,
            image=images / s.image,
            mounts=mounts,
            network=s.network,
            args=args,
            env={"HOTFLOAT_IMAGE_DIGEST": digest},
            gpu=s.gpu,
            **(GPU_LIMITS if s.gpu else {}),
        )
        log = state / f"{s.name}.log"
        runtime.start(container, log)
        if s.socket:
            _wait_for(sockets / s.socket, log)
        started.append(
            {
                "name": s.name,
                "image": f"{s.image}@{digest}",
                "network": "host" if s.network else "none",
                "socket": str(sockets / s.socket) if s.socket else "",
                "log": str(log),
            }
        )
    return started


def _wait_for(socket: Path, log: Path) -> None:
    deadline = time.monotonic() + _READY_S
    while time.monotonic() < deadline:
        if socket.exists():
            return
        time.sleep(0.5)
    tail = log.read_text(errors="replace")[-1500:] if log.exists() else ""
    raise InfrastructureError(f"{socket.name} did not appear within {_READY_S:.0f} s; log tail:\n{tail}")


def down(state: Path) -> list[str]:
    """Stops every service container the last `up` planned (whether or not it is still running); returns their names."""
    recorded = state / "containers.json"
    names = [*reversed(json.loads(recorded.read_text()) if recorded.exists() else [s.name for s in services()])]
    for name in names:
        runtime.stop(name)
    return names


_MINER_SCRIPT = """
import json, subprocess
stages = [("identity", ["hash", "/bundle", "--json"]), ("scan", ["scan", "/bundle", "--json"]),
          ("verify", ["verify", "/bundle", "--device", "cpu", "--json"]),
          ("build", ["build", "/bundle", "--out", "/tmp/build", "--json"])]
out = {}
for stage, argv in stages:
    if stage in ("verify", "build") and out["scan"]["rc"] != 0:
        break
    done = subprocess.run(["hotfloat", *argv], capture_output=True, text=True)
    out[stage] = {"rc": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-3000:]}
print(json.dumps(out))
"""


def miner(bundle: Path, image: Path, *, timeout: float = 900) -> dict:
    """Runs hash, scan, verify --device cpu and the deviceless build inside the compiler image, offline, with the
    bundle read-only; returns each stage's status as the validator would judge it, and the identity to commit."""
    digest = Layout(image).manifest_digest()
    container = Container(
        name=f"hotfloat-miner-{os.getpid()}",
        image=image,
        mounts=(Mount(bundle.resolve(), "/bundle"),),
        args=("python3", "-c", _MINER_SCRIPT),
        env={"HOTFLOAT_IMAGE_DIGEST": digest},
    )
    done = runtime.run(container, timeout=timeout)
    try:
        results = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        raise InfrastructureError(
            f"the compiler container gave no result (exit {done.returncode}): {(done.stderr or done.stdout)[-1500:]}"
        ) from e
    stages = []
    for stage in ("scan", "verify", "build"):
        result = results.get(stage)
        if result is None:
            stages.append({"stage": stage, "status": Status.N_A.value, "detail": "skipped: scan failed"})
            continue
        status = EXIT_STATUS.get(result["rc"], Status.NO_DECISION)
        report = _json(result["stdout"])
        detail = result["stderr"].strip().splitlines()[-1] if result["stderr"].strip() else f"exit {result['rc']}"
        if isinstance(report, dict) and "status" in report:
            detail = f"{report['status']}" + (f" in {report['seconds']:.0f} s" if report.get("seconds") else "")
        stages.append({"stage": stage, "status": status.value, "detail": detail, "report": report})
    ident = _json(results.get("identity", {}).get("stdout", "")) or {}
    return {
        "bundle": str(bundle),
        "identity": ident.get("identity"),
        "bundle_id": ident.get("bundle_id"),
        "image": digest,
        "stages": stages,
    }


def _json(text: str) -> object | None:
    try:
        return json.loads(text)
    except ValueError:
        return None


class MinerCheckFailed(HotfloatError):
    """The bundle would not pass the validator's scan, verify or build stages."""

    exit_code = 1  # ExitCode.FAIL: a verdict on the bundle, not bad input
    grpc_status = "FAILED_PRECONDITION"


def raise_on_failure(report: dict) -> None:
    """N/A moves a bundle on in the validator too (a build with nothing to compile); anything else not PASS stops it."""
    failed = [s for s in report["stages"] if s["status"] not in (Status.PASS.value, Status.N_A.value)]
    if failed:
        kind = InfrastructureError if all(s["status"] == Status.NO_DECISION.value for s in failed) else MinerCheckFailed
        raise kind("miner check did not pass: " + ", ".join(f"{s['stage']} {s['status']}" for s in failed))
