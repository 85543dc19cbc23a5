"""What a sandboxed child can see: system libraries and the Python runtime read-only, explicit binds, nothing else.

The validator's home, repository, credentials, /etc/passwd and sockets stay outside; the child's /tmp is a
private, size-bounded tmpfs and its environment is rebuilt from an allowlist.
"""

from __future__ import annotations

import glob
import os
import site
import sys
from dataclasses import dataclass
from pathlib import Path

from .policy import SandboxPolicy

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_ALLOWLIST = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime")
"""The dynamic loader's configuration and compiler alternatives (Triton JIT needs gcc on GPUs); no passwd, hosts or keys."""
NVIDIA_DEVICES = ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset")


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


def bwrap_argv(policy: SandboxPolicy, argv: list[str], *, binds: list[Bind], env: dict[str, str]) -> list[str]:
    """The full bubblewrap command: every namespace unshared, capabilities dropped, dies with its parent."""
    cmd = [
        "bwrap", "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent", "--new-session",
        "--cap-drop", "ALL", "--proc", "/proc", "--dev", "/dev",
        "--size", str(policy.tmp_bytes), "--tmpfs", "/tmp",
    ]
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
    if policy.gpu:
        for dev in (*sorted(glob.glob("/dev/nvidia[0-9]*")), *NVIDIA_DEVICES):
            cmd += ["--dev-bind-try", dev, dev]
        cmd += ["--ro-bind-try", "/sys", "/sys"]
    for b in binds:
        cmd += ["--bind" if b.writable else "--ro-bind", str(b.host), b.inside]
    cmd += ["--remount-ro", "/", "--clearenv"]
    for k, v in sorted(env.items()):
        cmd += ["--setenv", k, v]
    return [*cmd, "--chdir", "/tmp", "--", *argv]
