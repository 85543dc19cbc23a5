"""The live serving tier: boot the engine three times and prove the armed kernel really runs in the serving path.

Null-armed baseline, exact-math bundle, broken bundle: the exact bundle must reproduce the baseline's greedy
completion byte for byte and the broken one must change it. Activation is silent by design, so this behavioural
comparison (plus each rank's seam report naming the armed identity) is the honest detector. Every prerequisite is
checked up front and a missing one raises: once armed, this tier never skips.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from ..bundle import load_bundle
from ..errors import InfrastructureError
from ..verdict import Status


@dataclass(frozen=True)
class LiveConfig:
    """Everything one live run needs; `from_env` reads the documented HOTFLOAT_SERVE_* variables."""

    engine_python: str
    model_path: str
    exact_bundle: str
    broken_bundle: str
    tp: int = 1
    gpus: str = "0"
    boot_timeout_s: float = 320.0
    prompt: str = "The capital of France is"
    max_new_tokens: int = 32
    server_cmd: tuple[str, ...] | None = None
    """Overrides `python -m sglang.launch_server` (the CI stand-in); {port} and {tp} are substituted."""
    extra_args: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_env(cls, env: dict, *, exact_bundle: str, broken_bundle: str, engine_python: str) -> "LiveConfig":
        tp = int(env.get("HOTFLOAT_SERVE_TP", "1"))
        return cls(
            engine_python=env.get("HOTFLOAT_ENGINE_PYTHON") or engine_python,
            model_path=env.get("HOTFLOAT_SERVE_MODEL", ""),
            exact_bundle=exact_bundle, broken_bundle=broken_bundle, tp=tp,
            gpus=env.get("HOTFLOAT_SERVE_GPU", "0" if tp == 1 else "0,1"),
            boot_timeout_s=float(env.get("HOTFLOAT_SERVE_BOOT_TIMEOUT_S", "320")),
            extra_args=tuple(env.get("HOTFLOAT_SERVE_EXTRA_ARGS", "").split()),
        )


@dataclass(frozen=True)
class Arm:
    """One boot's outcome: the completion text and the identities the engine's processes reported arming."""

    name: str
    identity: str | None
    completion: str
    reported: tuple[str | None, ...]


@dataclass(frozen=True)
class LiveResult:
    status: Status
    reason: str
    arms: tuple[Arm, ...]


def preflight(cfg: LiveConfig) -> None:
    """Raises on the first missing prerequisite, so an armed run fails loudly instead of skipping."""
    if cfg.tp not in (1, 2):
        raise InfrastructureError(f"HOTFLOAT_SERVE_TP must be 1 or 2, got {cfg.tp}")
    if len(cfg.gpus.split(",")) != cfg.tp:
        raise InfrastructureError(f"HOTFLOAT_SERVE_GPU={cfg.gpus!r} must name {cfg.tp} device(s)")
    if not cfg.model_path or not Path(cfg.model_path).exists():
        raise InfrastructureError(f"HOTFLOAT_SERVE_MODEL={cfg.model_path!r} is not an existing model path")
    if cfg.server_cmd is None and not Path(cfg.engine_python).exists():
        raise InfrastructureError(f"engine interpreter {cfg.engine_python} does not exist (make engine)")
    for b in (cfg.exact_bundle, cfg.broken_bundle):
        load_bundle(b)


def run_live(cfg: LiveConfig) -> LiveResult:
    """Boots baseline, exact and broken arms in turn and judges the three completions."""
    preflight(cfg)
    arms = [_boot_and_generate(cfg, name, bundle) for name, bundle in
            (("baseline", None), ("exact", cfg.exact_bundle), ("broken", cfg.broken_bundle))]
    base, exact, broken = arms
    for arm in arms:
        if len(arm.reported) < cfg.tp or set(arm.reported) != {arm.identity}:
            return LiveResult(Status.FAIL, f"{arm.name}: engine processes armed {list(arm.reported)}, "
                                           f"expected {arm.identity} in at least {cfg.tp}", tuple(arms))
    if not base.completion:
        return LiveResult(Status.NO_DECISION, "the baseline produced an empty completion", tuple(arms))
    if exact.completion != base.completion:
        return LiveResult(Status.FAIL, "the exact-math bundle changed the greedy completion", tuple(arms))
    if broken.completion == base.completion:
        return LiveResult(Status.FAIL, "the broken bundle left the completion unchanged: the seam is not active",
                          tuple(arms))
    return LiveResult(Status.PASS, "exact reproduced the baseline byte for byte; broken corrupted it", tuple(arms))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _command(cfg: LiveConfig, port: int) -> list[str]:
    if cfg.server_cmd is not None:
        return [a.format(port=port, tp=cfg.tp) for a in cfg.server_cmd]
    return [cfg.engine_python, "-m", "sglang.launch_server", "--model-path", cfg.model_path, "--tp-size", str(cfg.tp),
            "--host", "127.0.0.1", "--port", str(port), "--random-seed", "0", *cfg.extra_args]


def _boot_and_generate(cfg: LiveConfig, name: str, bundle: str | None) -> Arm:
    identity = load_bundle(bundle).identity if bundle else None
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix=f"hotfloat-live-{name}-") as reports:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HOTFLOAT_ARMED_")}
        env.update(HOTFLOAT_SEAMS="1", SGLANG_PLUGINS="hotfloat", HOTFLOAT_SEAMS_REPORT_DIR=reports,
                   CUDA_VISIBLE_DEVICES=cfg.gpus, HOTFLOAT_SERVE_MODEL=cfg.model_path)
        if bundle:
            env.update(HOTFLOAT_ARMED_BUNDLE=str(Path(bundle).resolve()), HOTFLOAT_ARMED_IDENTITY=identity)
        log = Path(reports) / "server.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(_command(cfg, port), env=env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            _wait_ready(proc, port, cfg.boot_timeout_s, log)
            completion = _generate(port, cfg.prompt, cfg.max_new_tokens)
            reported = tuple(json.loads(p.read_text())["identity"] for p in sorted(Path(reports).glob("seams-*.json")))
        finally:
            _stop(proc)
    return Arm(name, identity, completion, reported)


def _wait_ready(proc: subprocess.Popen, port: int, timeout_s: float, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-5:]
            raise InfrastructureError(f"the server exited with {proc.returncode} while booting: {' | '.join(tail)}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise InfrastructureError(f"the server was not ready within {timeout_s:g} s")


def _generate(port: int, prompt: str, max_new_tokens: int) -> str:
    """One greedy completion through SGLang's native /generate API."""
    body = json.dumps({"text": prompt, "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens}})
    req = urllib.request.Request(f"http://127.0.0.1:{port}/generate", data=body.encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return json.loads(r.read())["text"]
    except (urllib.error.URLError, OSError, ValueError, KeyError, TypeError) as e:
        raise InfrastructureError(f"/generate failed: {e}") from None


def _stop(proc: subprocess.Popen) -> None:
    """Ends the server's whole process group (schedulers, detokenizer), gently first."""
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
