"""The runtime sandbox for candidate children: namespaces, seccomp, rlimits and cgroups (or a dropped uid), fail-closed.

Reuse: `spawn(argv, SandboxPolicy(...), sandboxed=True, binds=[Bind(host, inside)], env=child_env({...}, home="/tmp"),
cwd=...)` returns a SandboxedProcess whose `kill()` ends every descendant. All processes of one spawn share one
private network namespace (only loopback), so a multi-rank collective run belongs inside a single spawn. A one-shot
child (one request, one result) uses `run_child(argv, ResultModel, request=..., startup_s=..., timeout_s=...)` on top
of spawn; its side is `hotfloat.sandbox.channel`.
"""

from .child import ChildOutcome, hotfloat_binds, run_child
from .mounts import Bind, bwrap_argv, python_runtime_dirs
from .policy import GiB, MiB, SandboxPolicy
from .process import JOIN_FAILED, SandboxedProcess, child_env, ensure_available, log_tail, spawn

__all__ = [
    "GiB",
    "JOIN_FAILED",
    "MiB",
    "Bind",
    "ChildOutcome",
    "SandboxPolicy",
    "SandboxedProcess",
    "bwrap_argv",
    "child_env",
    "ensure_available",
    "hotfloat_binds",
    "log_tail",
    "python_runtime_dirs",
    "run_child",
    "spawn",
]
