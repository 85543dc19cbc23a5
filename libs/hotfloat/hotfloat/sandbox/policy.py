"""The limits a candidate child runs under: one record, so every caller states its budget explicitly."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from ..record import Record

GiB = 1 << 30
MiB = 1 << 20


class SandboxPolicy(Record):
    """Resource bounds for one sandboxed child; the wall-clock timeout belongs to the caller, which owns the clock."""

    cpu_seconds: Annotated[int, Field(ge=1)] = 600
    """RLIMIT_CPU per process: a spinning child is killed by the kernel even if the caller's clock fails."""
    address_space_bytes: Annotated[int, Field(ge=256 * MiB)] | None = 16 * GiB
    """RLIMIT_AS; None for CUDA children, whose driver reserves terabytes of virtual address space."""
    memory_bytes: Annotated[int, Field(ge=256 * MiB)] = 8 * GiB
    """Resident memory bound, enforced by a memory cgroup where the host lets us create one."""
    max_processes: Annotated[int, Field(ge=4)] = 256
    """Processes and threads (pids cgroup or RLIMIT_NPROC): a fork bomb stops here."""
    max_open_files: Annotated[int, Field(ge=64)] = 1024
    """RLIMIT_NOFILE."""
    max_file_bytes: Annotated[int, Field(ge=MiB)] = 256 * MiB
    """RLIMIT_FSIZE: bounds every file the child writes, including its captured stdout and stderr."""
    tmp_bytes: Annotated[int, Field(ge=MiB)] = 512 * MiB
    """Size of the private tmpfs mounted at /tmp inside the sandbox."""
    gpu: bool = False
    """Expose the NVIDIA device nodes (of the GPUs CUDA_VISIBLE_DEVICES leaves, `sandbox.gpus`) and /sys (read-only)
    so CUDA works inside."""
    writable_dev: bool = True
    """False mounts /dev (and /dev/shm with it) read-only, for a sandbox that must carry no state in shared memory
    (collectives and engines need it writable)."""
