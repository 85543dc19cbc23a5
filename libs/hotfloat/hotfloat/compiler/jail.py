"""Runs the build child in the candidate sandbox (`hotfloat.sandbox`): no network, system and Python runtime
read-only, one writable work directory at /build, rlimits and a cgroup, and a wall-clock timeout. Fail closed."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..sandbox import Bind, SandboxPolicy, child_env, spawn

OUTPUT_CAP = 64 << 10
WORK = "/build"
TOOL = "/hotfloat-build"


@dataclass(frozen=True)
class Finished:
    """How the jailed child ended: its exit code (None on timeout) and the tail of its output."""

    returncode: int | None
    output_tail: str


def run_jailed(
    python: str, child: Path, *, workdir: Path, env: dict[str, str], timeout_s: float, policy: SandboxPolicy
) -> Finished:
    """Runs `python -I child /build` with `workdir` as /build; the whole process tree is killed when the timeout passes."""
    log = workdir / ".log"
    binds = [Bind(workdir.resolve(), WORK, writable=True), Bind(child.resolve().parent, TOOL)]
    with open(log, "wb") as out:
        proc = spawn(
            [python, "-I", f"{TOOL}/{child.name}", WORK],
            policy,
            sandboxed=True,
            binds=binds,
            env=child_env(env, home=WORK),
            cwd=str(workdir),
            stdout=out,
        )
        try:
            code = proc.popen.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            proc.kill()
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - OUTPUT_CAP))
        tail = f.read().decode("utf-8", "replace")
    log.unlink()
    return Finished(code, tail)
