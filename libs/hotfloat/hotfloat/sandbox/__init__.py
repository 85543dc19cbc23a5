"""The runtime sandbox for candidate children: namespaces, rlimits and cgroups, fail-closed.

Reuse: `spawn(argv, SandboxPolicy(...), sandboxed=True, binds=[Bind(host, inside)], env=child_env({...}, home="/tmp"),
cwd=...)` returns a SandboxedProcess whose `kill()` ends every descendant. All processes of one spawn share one
private network namespace (only loopback), so a multi-rank collective run belongs inside a single spawn.
"""

from .mounts import Bind, bwrap_argv, python_runtime_dirs
from .policy import GiB, MiB, SandboxPolicy
from .process import JOIN_FAILED, SandboxedProcess, child_env, ensure_available, log_tail, spawn

__all__ = ["GiB", "JOIN_FAILED", "MiB", "Bind", "SandboxPolicy", "SandboxedProcess", "bwrap_argv", "child_env",
           "ensure_available", "log_tail", "python_runtime_dirs", "spawn"]
