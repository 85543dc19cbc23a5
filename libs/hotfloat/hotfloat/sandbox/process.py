"""Starting and ending a candidate child: namespaces (bubblewrap), a seccomp filter, rlimits (prlimit) and a
cgroup (or an unprivileged uid), fail-closed.

Order of wrappers: `setpriv --pdeathsig` ties the child to the thread that started it, `sh` joins the cgroup,
`prlimit` sets rlimits, `bwrap` builds the namespaces and installs the seccomp filter, `setpriv` drops to a fresh uid
where we are root and no pids cgroup exists, then the child runs. Nothing in the chain executes candidate code before
every bound is in place, and no child outlives a validator that is killed (bwrap's --die-with-parent covers the
sandbox inside; the outer pdeathsig covers an --unsandboxed child, which runs in its own session).
"""

from __future__ import annotations

import functools
import logging
import os
import secrets
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from typing import IO

from ..errors import InfrastructureError, SandboxUnavailable
from .cgroup import Cgroup
from .mounts import Bind, bwrap_argv
from .policy import SandboxPolicy
from .seccomp import SeccompUnavailable, filter_bpf, filter_fd

log = logging.getLogger("hotfloat.sandbox")

JOIN_FAILED = 97
"""Exit status of the cgroup-joining wrapper when it cannot join: an infrastructure fault, not the candidate's."""
SANDBOX_UIDS = (1_500_000_000, 1_600_000_000)
"""Where a root validator without a pids cgroup finds a fresh uid per child: RLIMIT_NPROC then counts only that
child's processes, and no two children (nor the validator) can signal each other."""
_JOIN = 'while [ "$1" != "--" ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'


@dataclass
class SandboxedProcess:
    """A running child and everything needed to end it and all its descendants."""

    popen: subprocess.Popen
    cgroup: Cgroup | None
    sandboxed: bool
    bounds: frozenset[str] = field(default_factory=frozenset)
    """Which bounds hold: namespaces, seccomp, rlimits, pids, memory, and how (cgroup-v1, cgroup-v2, uid-drop)."""

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
    # USER/LOGNAME: the sandbox has no /etc/passwd, and getpass.getuser() (torch inductor's cache path) reads these
    # before it falls back to pwd.getpwuid, which raises there.
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "USER": "hotfloat",
        "LOGNAME": "hotfloat",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
    }
    for k in ("OMP_NUM_THREADS", "CUDA_VISIBLE_DEVICES"):
        if k in os.environ:
            env[k] = os.environ[k]
    env.update(extra)
    return env


@functools.cache
def _probe(gpu: bool) -> str | None:
    """Why the sandbox cannot be built here, or None; runs a trivial command in the full namespace set and under
    the seccomp filter once."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed; run `make system-deps`"
    if shutil.which("prlimit") is None:
        return "prlimit (util-linux) is not installed; run `make system-deps`"
    try:
        filter_bpf()
    except SeccompUnavailable as e:
        return f"no seccomp filter: {e}; run `make system-deps` and `make setup`"
    return _run_probe(lambda fd: bwrap_argv(SandboxPolicy(gpu=gpu), ["/usr/bin/true"], binds=[], env={}, seccomp_fd=fd))


def _run_probe(argv_for) -> str | None:
    """Runs `argv_for(filter fd)` once; its error output is the reason when it fails."""
    fd = filter_fd()
    try:
        r = subprocess.run(argv_for(fd), capture_output=True, timeout=30, text=True, pass_fds=(fd,))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"bubblewrap failed to start: {e}"
    finally:
        os.close(fd)
    if r.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {r.stderr.strip()[:300]}"
    return None


@functools.cache
def _probe_uid() -> str | None:
    """Why dropping to an unprivileged uid cannot work here (no setpriv, or no user namespaces for non-root)."""
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    return _run_probe(
        lambda fd: bwrap_argv(
            SandboxPolicy(), ["/usr/bin/true"], binds=[], env={}, seccomp_fd=fd, as_uid=SANDBOX_UIDS[0]
        )
    )


def ensure_available(policy: SandboxPolicy) -> None:
    """Raises SandboxUnavailable unless namespaces work; called before any candidate code is given a process."""
    reason = _probe(policy.gpu)
    if reason:
        raise SandboxUnavailable(f"{reason} (refusing to run candidate code; --unsandboxed for local development)")


def spawn(
    argv: list[str],
    policy: SandboxPolicy,
    *,
    sandboxed: bool,
    binds: list[Bind],
    env: dict[str, str],
    cwd: str,
    pass_fds: tuple[int, ...] = (),
    stdin: IO | int | None = None,
    stdout: IO | int | None = None,
) -> SandboxedProcess:
    """Starts `argv` under every available bound; refuses (fail closed) when sandboxed and a bound is missing."""
    if sandboxed:
        ensure_available(policy)
    else:
        log.warning(
            "UNSANDBOXED: candidate code runs with the validator's filesystem and network view (local development only)"
        )
    cgroup = Cgroup.create(policy)
    # no POSIX message queues: they outlive their creator, a channel between children sharing an IPC namespace
    limits = [
        f"--cpu={policy.cpu_seconds}",
        f"--nofile={policy.max_open_files}",
        f"--fsize={policy.max_file_bytes}",
        "--core=0",
        "--msgqueue=0",
    ]
    if policy.address_space_bytes is not None:
        limits.append(f"--as={policy.address_space_bytes}")
    bounds = {"rlimits", *cgroup.bounds, *([cgroup.version] if cgroup.version else [])}
    uid: int | None = None
    if "pids" not in cgroup.bounds:
        if os.geteuid() == 0 and sandboxed:
            reason = _probe_uid()
            if reason:
                cgroup.remove()
                raise SandboxUnavailable(
                    "cannot bound the child's process count: running as root, no pids cgroup can be created, and "
                    f"no unprivileged uid can run the sandbox ({reason}) (refusing to run candidate code)"
                )
            uid = SANDBOX_UIDS[0] + secrets.randbelow(SANDBOX_UIDS[1] - SANDBOX_UIDS[0])
            for b in binds:
                if b.writable:
                    _chown_tree(b.host, uid)
            limits.append(f"--nproc={policy.max_processes}")
            bounds |= {"pids", "uid-drop"}
        else:
            limits.append(f"--nproc={_user_processes() + policy.max_processes}")
    seccomp = filter_fd() if sandboxed else None
    inner = bwrap_argv(policy, argv, binds=binds, env=env, seccomp_fd=seccomp, as_uid=uid) if sandboxed else argv
    cmd = [shutil.which("prlimit") or "prlimit", *limits, "--", *inner]
    if cgroup.dirs:
        cmd = ["/bin/sh", "-c", _JOIN, "sh", *cgroup.procs_files, "--", *cmd]
    cmd = [shutil.which("setpriv") or "setpriv", "--pdeathsig", "KILL", "--", *cmd]
    if sandboxed:
        bounds |= {"namespaces", "seccomp"}
    try:
        popen = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=stdout,
            stderr=subprocess.STDOUT,
            pass_fds=(*pass_fds, *([seccomp] if sandboxed else [])),
            cwd=cwd,
            env=env if not sandboxed else {"PATH": "/usr/bin:/bin"},
            start_new_session=True,
        )
    except OSError as e:
        cgroup.remove()
        raise InfrastructureError(f"cannot start the candidate child: {e}") from None
    finally:
        if seccomp is not None:
            os.close(seccomp)
    return SandboxedProcess(
        popen=popen, cgroup=cgroup if cgroup.dirs else None, sandboxed=sandboxed, bounds=frozenset(bounds)
    )


def _chown_tree(path, uid: int) -> None:
    """Hands a writable bind to the child's uid, so it can write there and nowhere else on the host."""
    os.chown(path, uid, uid, follow_symlinks=False)
    for root, dirs, files in os.walk(path):
        for name in (*dirs, *files):
            os.chown(os.path.join(root, name), uid, uid, follow_symlinks=False)


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
