"""The child launcher: stages a bundle, starts the sandboxed child harness, and speaks the wire protocol with deadlines.

Reuse: `with ChildSession(files, device=..., sandboxed=..., policy=...) as child: child.launch(startup_s);
child.ready(); child.request("load", {...}, deadline=...)`. `launch` returns at once and this module never imports
torch, so a caller can start the child's interpreter before paying for its own torch import. Faults the candidate can
cause (timeouts, death, garbage on the channel) raise ChildFault, which callers turn into FAIL verdicts; faults before
any candidate code ran raise InfrastructureError.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from pathlib import Path

from ..errors import InfrastructureError
from ..sandbox import Bind, SandboxedProcess, SandboxPolicy, child_env, log_tail, spawn
from . import wire

HERE = Path(__file__).resolve().parent
CHILD_DIR = "/hotfloat-child"
BUNDLE_DIR = "/bundle"
REPLY_KINDS = {"hello", "loaded", "result", "captured", "raised"}


class ChildFault(Exception):
    """The candidate child timed out, died or broke the protocol: a FAIL for the candidate, never a crash here."""


class ChildSession:
    """One candidate child serving one op; always torn down (killed, cgroup removed, files deleted) on exit."""

    def __init__(
        self, files: dict[str, bytes], *, device: str, sandboxed: bool, policy: SandboxPolicy, label: str = "child"
    ):
        self.files, self.device, self.sandboxed, self.policy = files, device, sandboxed, policy
        self.run_id = f"{label}-{uuid.uuid4().hex[:12]}"
        """On the child's command line (with the caller's label, e.g. the bundle identity), so a leaked process
        can be found and tests can prove none outlived the session."""
        self.proc: SandboxedProcess | None = None
        self.hello: dict = {}
        self._startup_deadline = 0.0
        self._dir = Path(tempfile.mkdtemp(prefix="hotfloat-verify-"))
        self._fds: list[int] = []

    @property
    def bundle_root(self) -> str:
        """Where the child sees the bundle's files (read-only when sandboxed)."""
        return BUNDLE_DIR if self.sandboxed else str(self._dir / "bundle")

    @property
    def bounds(self) -> list[str]:
        return sorted(self.proc.bounds) if self.proc else []

    def __enter__(self) -> ChildSession:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def launch(self, startup_s: float) -> None:
        """Starts the child without waiting for it; `ready` then has until `startup_s` from now for its hello."""
        self._startup_deadline = time.monotonic() + startup_s
        bundle = self._dir / "bundle"
        for rel, data in self.files.items():
            p = bundle / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
        os.chmod(self._dir, 0o755)
        home = self._dir / "home"
        home.mkdir()
        from_parent, to_child = os.pipe()
        from_child, to_parent = os.pipe()
        self._fds = [from_parent, to_parent]
        os.set_blocking(from_child, False)
        os.set_blocking(to_child, False)
        self._r, self._w = from_child, to_child
        extra = {"TRITON_CACHE_DIR": "/tmp/triton" if self.sandboxed else str(home / "triton"), "OMP_NUM_THREADS": "1"}
        if self.device == "cpu":
            extra["TRITON_INTERPRET"] = "1"
        env = child_env(extra, home="/tmp" if self.sandboxed else str(home))
        child_dir = CHILD_DIR if self.sandboxed else str(HERE)
        argv = [
            sys.executable,
            "-E",
            "-s",
            "-B",
            f"{child_dir}/child.py",
            str(from_parent),
            str(to_parent),
            self.device,
            self.run_id,
        ]
        binds = [
            Bind(HERE / "child.py", f"{CHILD_DIR}/child.py"),
            Bind(HERE / "wire.py", f"{CHILD_DIR}/wire.py"),
            Bind(bundle, BUNDLE_DIR),
        ]
        log = open(self._dir / "child.log", "wb")
        try:
            self.proc = spawn(
                argv,
                self.policy,
                sandboxed=self.sandboxed,
                binds=binds,
                env=env,
                cwd=str(home),
                pass_fds=(from_parent, to_parent),
                stdout=log,
            )
        finally:
            log.close()
            for fd in self._fds:
                os.close(fd)
            self._fds = []

    def ready(self) -> dict:
        """Waits for the child's hello, sent before any candidate code is imported. A child launched long before
        (one op ahead) gets a second to hand over the hello that is already waiting in the pipe."""
        deadline = max(self._startup_deadline, time.monotonic() + 1.0)
        try:
            frame = wire.read_frame(self._r, kinds={"hello"}, max_payload=0, deadline=deadline)
        except (wire.ProtocolError, TimeoutError) as e:
            raise InfrastructureError(f"the verify child did not start ({e}): {self.log_tail()}") from None
        self.hello = frame.meta
        return self.hello

    def request(self, kind: str, meta: dict, tensors=(), *, deadline: float, max_payload: int = 0) -> wire.Frame:
        """Sends one request and returns the reply; any misbehaviour of the child becomes a ChildFault."""
        self.send(kind, meta, tensors, deadline=deadline)
        return self.receive(kind, deadline=deadline, max_payload=max_payload)

    def send(self, kind: str, meta: dict, tensors=(), *, deadline: float) -> None:
        """Sends a request without waiting for its reply, so the caller can work while the child runs it."""
        with self._faults(kind):
            wire.write_frame(self._w, wire.encode(kind, meta, list(tensors)), deadline)

    def receive(self, kind: str, *, deadline: float, max_payload: int = 0) -> wire.Frame:
        """The reply to the request of `kind` sent last."""
        with self._faults(kind):
            return wire.read_frame(self._r, kinds=REPLY_KINDS, max_payload=max_payload, deadline=deadline)

    @contextlib.contextmanager
    def _faults(self, kind: str):
        """Any misbehaviour of the child on the channel becomes a ChildFault."""
        try:
            yield
        except TimeoutError:
            raise ChildFault("timed out: no reply before the op's deadline; the child was killed") from None
        except wire.ProtocolError as e:
            status = self._status()
            if status is not None:
                raise ChildFault(f"the child died during {kind} ({_describe_status(status)})") from None
            raise ChildFault(f"protocol violation on the result channel: {e}") from None

    def _status(self) -> int | None:
        """The child's exit status if it has exited, after a short grace for a dying process."""
        if self.proc is None:
            return None
        for _ in range(50):
            rc = self.proc.popen.poll()
            if rc is not None:
                return rc
            time.sleep(0.01)
        return None

    def log_tail(self) -> str:
        """The end of the child's stdout and stderr, for infrastructure diagnostics only (never for verdicts)."""
        return log_tail(self._dir / "child.log")

    def close(self) -> None:
        """Kills everything the child started and removes the staging directory; a second call does nothing.
        Nothing the child does after its last reply counts, so it is not asked to exit (an interpreter holding
        torch takes about half a second to wind down)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc = None
        for fd in (getattr(self, "_r", None), getattr(self, "_w", None), *self._fds):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self._r = self._w = None
        self._fds = []
        shutil.rmtree(self._dir, ignore_errors=True)


def _describe_status(rc: int) -> str:
    if rc > 128:
        rc = -(rc - 128)
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"
