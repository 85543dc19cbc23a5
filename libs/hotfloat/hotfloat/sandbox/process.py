"""Starting and ending a candidate child: namespaces (bubblewrap), rlimits (prlimit) and a cgroup, fail-closed.

Order of wrappers: `sh` joins the cgroup, `prlimit` sets rlimits, `bwrap` builds the namespaces, then the child
runs. Nothing in the chain executes candidate code before every bound is in place.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from typing import IO

from ..errors import InfrastructureError, SandboxUnavailable
from .cgroup import Cgroup
from .mounts import Bind, bwrap_argv
from .policy import SandboxPolicy

log = logging.getLogger("hotfloat.sandbox")

JOIN_FAILED = 97
"""Exit status of the cgroup-joining wrapper when it cannot join: an infrastructure fault, not the candidate's."""
_JOIN = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'


@dataclass
class SandboxedProcess:
    """A running child and everything needed to end it and all its descendants."""

    popen: subprocess.Popen
    cgroup: Cgroup | None
    sandboxed: bool
    bounds: frozenset[str] = field(default_factory=frozenset)
    """Which bounds hold: namespaces, rlimits, pids, memory."""

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill(self) -> int | None:
        """Kills the whole tree (process group, pid namespace, cgroup) and reaps the child; returns its status."""
        try:
            os.killpg(self.popen.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.cgroup is not None:
            self.cgroup.remove()
        try:
            return self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            return None


def log_tail(path, n: int = 600) -> str:
    """The last `n` bytes of a sandboxed process's output log on one line, for infrastructure diagnostics only."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - n))
            data = f.read()
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip().replace("\n", " | ")


def child_env(extra: dict[str, str], *, home: str) -> dict[str, str]:
    """A fresh environment from an allowlist: the validator's secrets, tokens and paths never reach the child."""
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home, "TMPDIR": home, "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1"}
    for k in ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra)
    return env


@functools.cache
def _probe(gpu: bool) -> str | None:
    """Why the sandbox cannot be built here, or None; runs a trivial command in the full namespace set once."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed; run `make system-deps`"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed; run `make system-deps`"
    argv = bwrap_argv(SandboxPolicy(gpu=gpu), ["/usr/bin/true"], binds=[], env={})
    try:
        r = subprocess.run(argv, capture_output=True, timeout=30, text=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap failed to start: {e}"
    if r.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {r.stderr.strip()[:300]}"
    return None


def ensure_available(policy: SandboxPolicy) -> None:
    """Raises SandboxUnavailable unless namespaces work; called before any candidate code is given a process."""
    reason = _probe(policy.gpu)
    if reason:
        raise SandboxUnavailable(f"{reason} (refusing to run candidate code; --unsandboxed for local development)")


def spawn(argv: list[str], policy: SandboxPolicy, *, sandboxed: bool, binds: list[Bind], env: dict[str, str],
          cwd: str, pass_fds: tuple[int, ...] = (), stdin: IO | int | None = None,
          stdout: IO | int | None = None) -> SandboxedProcess:
    """Starts `argv` under every available bound; refuses (fail closed) when sandboxed and a bound is missing."""
    if sandboxed:
        ensure_available(policy)
    else:
        log.warning("UNSANDBOXED: candidate code runs with the validator's filesystem and network view "
                    "(local development only)")
    cgroup = Cgroup.create(policy)
    # no POSIX message queues: they outlive their creator, a channel between children sharing an IPC namespace
    limits = [f"--cpu={policy.cpu_seconds}", f"--nofile={policy.max_open_files}",
              f"--fsize={policy.max_file_bytes}", "--core=0", "--msgqueue=0"]
    if policy.address_space_bytes is not None:
        limits.append(f"--as={policy.address_space_bytes}")
    bounds = {"rlimits"}
    if "pids" not in cgroup.bounds:
        if os.geteuid() == 0 and sandboxed:
            cgroup.remove()
            raise SandboxUnavailable("cannot bound the child's process count: running as root (RLIMIT_NPROC does "
                                     "not apply) and no pids cgroup can be created")
        limits.append(f"--nproc={_user_processes() + policy.max_processes}")
    bounds |= cgroup.bounds
    inner = bwrap_argv(policy, argv, binds=binds, env=env) if sandboxed else argv
    cmd = ["prlimit", *limits, "--", *inner]
    if cgroup.dirs:
        cmd = ["/bin/sh", "-c", _JOIN, "sh", *cgroup.procs_files, "--", *cmd]
    if sandboxed:
        bounds.add("namespaces")
    try:
        popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL if stdin is None else stdin, stdout=stdout,
                                 stderr=subprocess.STDOUT, pass_fds=pass_fds, cwd=cwd,
                                 env=env if not sandboxed else {"PATH": "/usr/bin:/bin"}, start_new_session=True)
    except OSError as e:
        cgroup.remove()
        raise InfrastructureError(f"cannot start the candidate child: {e}") from None
    return SandboxedProcess(popen=popen, cgroup=cgroup if cgroup.dirs else None, sandboxed=sandboxed,
                            bounds=frozenset(bounds))


def _user_processes() -> int:
    """Processes our uid already owns: RLIMIT_NPROC counts them too, so the bound is set above them."""
    uid = os.getuid()
    count = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                count += os.stat(f"/proc/{p}").st_uid == uid
            except OSError:
                continue
    return count
