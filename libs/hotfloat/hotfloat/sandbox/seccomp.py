"""The system-call filter of every sandboxed child, built with libseccomp in the trusted parent and handed to
bubblewrap as compiled BPF (`--seccomp FD`), so the candidate needs nothing and cannot skip it.

A denylist over an allow-by-default filter: CUDA, Triton's JIT, NCCL and the Python runtime use a wide, driver-
dependent set of calls (ioctl, mmap, memfd, eventfd, sockets on loopback), so what is closed is the set a compute
kernel never needs and kernel exploits and escapes use: see `DENIED` and docs/security.md. Calls from a foreign
ABI (32-bit `int 0x80`) kill the process (libseccomp's bad-architecture action).
"""

from __future__ import annotations

import errno
import functools
import os

DENIED: dict[str, str] = {
    **dict.fromkeys(
        ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "process_madvise", "kcmp"),
        "reading or steering another process",
    ),
    **dict.fromkeys(
        (
            "mount",
            "umount2",
            "pivot_root",
            "chroot",
            "open_tree",
            "move_mount",
            "fsopen",
            "fsconfig",
            "fsmount",
            "fspick",
            "mount_setattr",
            "name_to_handle_at",
            "open_by_handle_at",
        ),
        "changing or escaping the filesystem view",
    ),
    **dict.fromkeys(("unshare", "setns"), "new or foreign namespaces"),
    **dict.fromkeys(("keyctl", "add_key", "request_key"), "the kernel keyring (not namespaced)"),
    **dict.fromkeys(
        (
            "bpf",
            "perf_event_open",
            "userfaultfd",
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "modify_ldt",
        ),
        "frequent kernel-exploit surface",
    ),
    **dict.fromkeys(
        (
            "kexec_load",
            "kexec_file_load",
            "init_module",
            "finit_module",
            "delete_module",
            "reboot",
            "swapon",
            "swapoff",
            "acct",
            "iopl",
            "ioperm",
            "syslog",
            "settimeofday",
            "clock_settime",
            "quotactl",
            "quotactl_fd",
            "lookup_dcookie",
            "vhangup",
            "uselib",
            "ustat",
            "sysfs",
            "nfsservctl",
            "sethostname",
            "setdomainname",
        ),
        "host administration a kernel never needs",
    ),
}
"""Each denied call with why; they fail with EPERM."""

NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}
"""clone() with any of these fails with EPERM; clone3 (whose flags sit behind a pointer no filter can read) fails
with ENOSYS, so libc falls back to clone."""


class SeccompUnavailable(Exception):
    """libseccomp (or its Python binding) is missing or refused the filter."""


@functools.cache
def filter_bpf() -> tuple[bytes, tuple[str, ...]]:
    """The compiled filter and the denied names this libseccomp does not know (reported, never silently dropped
    from the docs' promise); raises SeccompUnavailable."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as e:
        raise SeccompUnavailable(f"the libseccomp binding cannot be loaded: {e}") from None
    try:
        f = sc.SyscallFilter(sc.ALLOW)
        unknown = []
        for name in DENIED:
            nr = sc.resolve_syscall(sc.Arch.NATIVE, name)
            if nr < 0:
                unknown.append(name)
                continue
            f.add_rule(sc.ERRNO(errno.EPERM), nr)
        for flag in NAMESPACE_FLAGS.values():
            f.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
        with os.fdopen(os.memfd_create("hotfloat-seccomp-export", os.MFD_CLOEXEC), "w+b") as out:
            f.export_bpf(out)
            out.seek(0)
            bpf = out.read()
    except (OSError, ValueError, RuntimeError) as e:
        raise SeccompUnavailable(f"libseccomp refused the filter: {e}") from None
    if not bpf or len(bpf) % 8:
        raise SeccompUnavailable(f"libseccomp exported a malformed filter ({len(bpf)} bytes)")
    return bpf, tuple(unknown)


def filter_fd() -> int:
    """A fresh readable fd holding the compiled filter, for `bwrap --seccomp FD` (bwrap reads it to the end)."""
    bpf, _ = filter_bpf()
    fd = os.memfd_create("hotfloat-seccomp", os.MFD_CLOEXEC)
    os.write(fd, bpf)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
