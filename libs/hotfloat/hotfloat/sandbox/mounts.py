"""What a sandboxed child can see: system libraries and the Python runtime read-only, explicit binds, nothing else.

The validator's home, repository, credentials, /etc/passwd and sockets stay outside; the child's /tmp is a
private, size-bounded tmpfs and its environment is rebuilt from an allowlist.
"""

from __future__ import annotations

import os
import shutil
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from .gpus import device_nodes
from .policy import SandboxPolicy

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ALLOWLIST = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
"""The dynamic loader's configuration and compiler alternatives (Triton JIT needs gcc on GPUs); no passwd, hosts or keys."""


@dataclass(frozen=True)
class Bind:
    """A host path shown inside the sandbox at `inside`, read-only unless `writable`."""

    host: Path
    inside: str
    writable: bool = False


def python_runtime_dirs() -> list[str]:
    """The interpreter, its standard library and site-packages: what the child needs to import torch and triton."""
    dirs = {sys.base_prefix, sys.prefix, os.path.dirname(os.path.realpath(sys.executable))}
    dirs.update(site.getsitepackages())
    real = sorted({os.path.realpath(d) for d in dirs if os.path.isdir(d)} | {d for d in dirs if os.path.isdir(d)})
    kept: list[str] = []
    for d in real:
        covered = any(d == s or d.startswith(s.rstrip("/") + "/") for s in (*SYSTEM_DIRS, *kept))
        if not covered:
            kept.append(d)
    return kept


def bwrap_argv(
    policy: SandboxPolicy,
    argv: list[str],
    *,
    binds: list[Bind],
    env: dict[str, str],
    seccomp_fd: int | None = None,
    as_uid: int | None = None,
) -> list[str]:
    """The full bubblewrap command: every namespace unshared, capabilities dropped, dies with its parent, and the
    compiled seccomp filter read from `seccomp_fd` installed just before the child's exec.

    `as_uid`: root without a pids cgroup runs bwrap privileged (no user namespace, so root can mount what a
    non-root uid could not even reach) and `setpriv` switches the child to `as_uid` on the host, where
    RLIMIT_NPROC applies; the seccomp filter keeps it from making namespaces of its own."""
    bwrap = shutil.which("bwrap") or "bwrap"  # absolute: the launcher's PATH is minimal, a carried bwrap is elsewhere
    if as_uid is None:
        cmd = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    else:
        cmd = [
            bwrap,
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
            *[a for c in ("SETUID", "SETGID", "SETPCAP") for a in ("--cap-add", f"CAP_{c}")],
        ]
        argv = [
            "setpriv",
            f"--reuid={as_uid}",
            f"--regid={as_uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
            *argv,
        ]
    cmd += [
        "--die-with-parent",
        "--new-session",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        *(["--perms", "01777"] if as_uid is not None else []),
        "--size",
        str(policy.tmp_bytes),
        "--tmpfs",
        "/tmp",
    ]
    if as_uid is not None and policy.writable_dev:
        cmd += ["--perms", "01777", "--size", str(policy.tmp_bytes), "--tmpfs", "/dev/shm"]
    if as_uid is not None:
        for d in _ancestors([*python_runtime_dirs(), *(b.inside for b in binds)]):
            cmd += ["--perms", "0755", "--dir", d]
    if not policy.writable_dev:
        cmd += ["--remount-ro", "/dev"]
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            cmd += ["--symlink", os.readlink(d), d]
        elif os.path.isdir(d):
            cmd += ["--ro-bind", d, d]
    for p in ETC_ALLOWLIST:
        cmd += ["--ro-bind-try", p, p]
    for d in python_runtime_dirs():
        cmd += ["--ro-bind", d, d]
    if policy.gpu:  # only the GPUs this process may use (`serve --gpu N`): a candidate cannot touch a neighbour's
        for dev in device_nodes():
            cmd += ["--dev-bind-try", dev, dev]
        cmd += ["--ro-bind-try", "/sys", "/sys"]
    for b in binds:
        cmd += ["--bind" if b.writable else "--ro-bind", str(b.host), b.inside]
    cmd += ["--remount-ro", "/", "--clearenv"]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    for k, v in sorted(env.items()):
        cmd += ["--setenv", k, v]
    return [*cmd, "--chdir", "/tmp", "--", *argv]


def _ancestors(targets: list[str]) -> list[str]:
    """The directories above each mount point that bwrap would otherwise create with the host's modes (a 0700
    /root would lock a dropped uid out of an interpreter under it), outermost first."""
    out: list[str] = []
    for t in targets:
        parts = t.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            covered = d in ("/tmp", "/proc", "/dev") or any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS)
            if not covered and d not in out:
                out.append(d)
    return out
