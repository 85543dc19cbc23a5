"""One request, one schema-checked result: the way a one-shot candidate child is started, fed and read.

Protocol (the child side is `hotfloat.sandbox.channel`): the request is one JSON document on the child's stdin; the
child writes `ready` and a newline to the fd named by HOTFLOAT_RESULT_FD once its interpreter and libraries are up
and before any candidate code runs, then one JSON document, then exits. The parent enforces a start-up deadline (up
to `ready`) and a run deadline (from `ready` to the end of the result), caps the result's size, validates it against a
pydantic model and kills the whole sandbox afterwards, whatever happened. Sessions that speak more than once (verify
children, collective ranks, qualification engines) use `spawn` directly; this is built on it.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from .channel import RESULT_FD
from .mounts import Bind
from .policy import SandboxPolicy
from .process import spawn

M = TypeVar("M", bound=BaseModel)
READY = b"ready\n"
LIB = "/hotfloat-lib"
"""Where children that are hotfloat code (the native admission worker, the bench child) import it from."""
PACKAGE = Path(__file__).resolve().parents[1]


@dataclass
class ChildOutcome(Generic[M]):
    """How a one-shot child ended; `result` is set only when it answered in time with a valid document."""

    kind: Literal["ok", "startup_timeout", "timeout", "no_result", "malformed"]
    result: M | None
    detail: str
    """One line for the caller's verdict or error: what went wrong, with the child's exit status."""
    returncode: int | None
    output_tail: str
    """The end of the child's stdout and stderr, for infrastructure diagnostics only (never for verdicts)."""
    bounds: frozenset[str] = field(default_factory=frozenset)


def hotfloat_binds(environ: dict[str, str] | None = None) -> tuple[list[Bind], str]:
    """Binds and PYTHONPATH that make `hotfloat` (read-only, at LIB) and the validator's extra site directories
    importable: PYTHONPATH entries outside this checkout, bound at their own paths (a device payload's site)."""
    entries = [p for p in (environ or os.environ).get("PYTHONPATH", "").split(os.pathsep) if p and os.path.isdir(p)]
    checkout = PACKAGE.parents[2]
    extra = [
        p for p in entries if not Path(p).resolve().is_relative_to(checkout) and not (Path(p) / "hotfloat").exists()
    ]
    binds = [Bind(PACKAGE, f"{LIB}/hotfloat"), *(Bind(Path(p).resolve(), str(Path(p).resolve())) for p in extra)]
    return binds, os.pathsep.join([LIB, *(str(Path(p).resolve()) for p in extra)])


def run_child(
    argv: list[str],
    result: type[M],
    *,
    request: BaseModel | dict,
    policy: SandboxPolicy,
    sandboxed: bool,
    binds: list[Bind],
    env: dict[str, str],
    startup_s: float,
    timeout_s: float,
    on_line: Callable[[str], None] | None = None,
    max_result_bytes: int = 4 << 20,
) -> ChildOutcome[M]:
    """Starts `argv` in the sandbox, sends `request`, and returns its validated result or why there is none.

    `env` is the child's whole environment (build it with `child_env`); `on_line` sees each output line as it comes
    (progress), and the last lines are kept for diagnostics either way."""
    payload = request.model_dump_json() if isinstance(request, BaseModel) else json.dumps(request)
    req_r, req_w = os.pipe()
    res_r, res_w = os.pipe()
    out_r, out_w = os.pipe()
    with tempfile.TemporaryDirectory(prefix="hotfloat-child-") as home:
        try:
            proc = spawn(
                argv,
                policy,
                sandboxed=sandboxed,
                binds=binds,
                env={**env, RESULT_FD: str(res_w)},
                cwd=home,
                pass_fds=(res_w,),
                stdin=req_r,
                stdout=out_w,
            )
        except BaseException:
            for fd in (req_w, res_r, out_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, res_w, out_w):
                os.close(fd)
        tail: deque[str] = deque(maxlen=40)
        threads = [
            threading.Thread(target=_feed, args=(req_w, payload.encode()), daemon=True),
            threading.Thread(target=_drain, args=(out_r, tail, on_line), daemon=True),
        ]
        for t in threads:
            t.start()
        try:
            kind, data = _read(res_r, startup_s, timeout_s, max_result_bytes)
            try:
                rc = proc.popen.wait(timeout=5) if kind == "done" else None
            except subprocess.TimeoutExpired:
                rc = None
        finally:
            status = proc.kill()
            os.close(res_r)
            for t in threads:
                t.join(timeout=5)
    rc = rc if rc is not None else status
    output = " | ".join(tail)[-1200:]
    exit_text = f"exit status {rc}" if rc is not None else "still running"
    if kind == "startup":
        return ChildOutcome(
            "startup_timeout",
            None,
            f"the child did not start within {startup_s:g}s ({exit_text})",
            rc,
            output,
            proc.bounds,
        )
    if kind == "timeout":
        return ChildOutcome(
            "timeout", None, f"no result within {timeout_s:g}s; the child was killed", rc, output, proc.bounds
        )
    if kind == "toolarge":
        return ChildOutcome("malformed", None, f"result larger than {max_result_bytes} bytes", rc, output, proc.bounds)
    if not data.strip():
        return ChildOutcome(
            "no_result", None, f"the child ended without a result ({exit_text})", rc, output, proc.bounds
        )
    try:
        return ChildOutcome("ok", result.model_validate_json(data), "", rc, output, proc.bounds)
    except ValidationError as e:
        return ChildOutcome(
            "malformed",
            None,
            f"malformed result: {str(e).splitlines()[0][:200]} ({exit_text})",
            rc,
            output,
            proc.bounds,
        )


def _read(fd: int, startup_s: float, timeout_s: float, cap: int) -> tuple[str, bytes]:
    """('done', result bytes) at EOF, or 'startup' / 'timeout' / 'toolarge' when a bound is hit first."""
    buf = b""
    deadline = time.monotonic() + startup_s
    started = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return ("timeout" if started else "startup"), b""
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return "done", buf[len(READY) :] if started else b""
        buf += chunk
        if not started and len(buf) >= len(READY):
            if not buf.startswith(READY):
                return "done", buf  # no ready line: the result check reports it as malformed
            started, deadline = True, time.monotonic() + timeout_s
        if len(buf) > cap + len(READY):
            return "toolarge", b""


def _feed(fd: int, data: bytes) -> None:
    """Writes the request and closes the pipe; a child that never reads it just leaves this thread blocked until
    the kill closes the other end."""
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
    except OSError:
        pass


def _drain(fd: int, tail: deque, on_line) -> None:
    """Reads the child's output to its end (every holder is dead after the kill), keeping the last lines."""
    with os.fdopen(fd, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            tail.append(line[:400])
            if on_line is not None:
                on_line(line)
