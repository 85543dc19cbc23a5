"""The sandbox proof's host checks (tools/device/helpers/sandbox_proof.py runs them, in CHECKS order, then LAST): the cgroup
layout, bwrap and seccomp, a fork bomb and a memory bomb in sandboxed children, the native admission worker, and the
uid-drop fallback. Each takes (base policy, output folder, gpu) and returns (ok, detail)."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import time
from pathlib import Path

from hotfloat.bundle import load_bundle
from hotfloat.sandbox import GiB, SandboxPolicy, child_env, ensure_available, spawn
from hotfloat.sandbox import cgroup as cg
from hotfloat.sandbox import process as spawn_module

REPO = Path(__file__).resolve().parents[3]


def child(code: str, policy: SandboxPolicy, out: Path, timeout: float) -> tuple[int | None, str, frozenset]:
    """Runs python code in a sandboxed child; returns (status or None on timeout, output, bounds)."""
    log = out / f"child-{time.time_ns()}.log"
    with open(log, "wb") as f:
        proc = spawn(
            [sys.executable, "-I", "-c", textwrap.dedent(code)],
            policy,
            sandboxed=True,
            binds=[],
            env=child_env({}, home="/tmp"),
            cwd=str(out),
            stdout=f,
        )
    try:
        rc = proc.popen.wait(timeout=timeout)
    except Exception:
        rc = None
    finally:
        proc.kill()
    return rc, log.read_text(errors="replace"), proc.bounds


def cgroup_layout(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    root = cg.v2_root()
    group = cg.Cgroup.create(base)
    try:
        detail = (
            f"v2_root={root} own={cg.own_paths()} bounds={sorted(group.bounds)} version={group.version} "
            f"dirs={[str(d) for d in group.dirs]}"
        )
        if root is not None:
            detail += (
                f" root.subtree_control={(root / 'cgroup.subtree_control').read_text().strip()!r}"
                f" hotfloat-host={(root / cg.HOST_LEAF).exists()}"
            )
        return {"pids", "memory"} <= group.bounds, detail
    finally:
        group.remove()


def available(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    ensure_available(base)
    return True, f"bwrap={os.environ.get('HOTFLOAT_BWRAP', 'PATH')}"


def seccomp_under_cuda(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    rc, text, bounds = child(
        """
        import ctypes, json, os
        libc = ctypes.CDLL(None, use_errno=True)
        def call(nr, *a):
            ctypes.set_errno(0)
            r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])
            return os.strerror(ctypes.get_errno()) if r == -1 else "ok"
        got = {"keyctl": call(250, 0, -3, 0), "bpf": call(321, 0, 0, 0), "mount": call(165, 0, 0, 0, 0, 0),
               "unshare": call(272, 0x20000), "perf_event_open": call(298, 0, 0, -1, -1, 0),
               "clone3": call(435, 0, 0)}
        try:
            import torch
            x = torch.randn(1024, 1024, device="cuda" if torch.cuda.is_available() else "cpu")
            name = torch.cuda.get_device_name() if x.is_cuda else ""
            got["torch"] = f"{x.device} {float((x @ x).sum()):.1f} {name}"
        except Exception as e:
            got["torch"] = f"{type(e).__name__}: {e}"
        got["ptrace"] = call(101, 0, 0, 0, 0)
        print(json.dumps(got))
    """,
        base,
        out,
        120,
    )
    got = json.loads(text.strip().splitlines()[-1]) if rc == 0 else {}
    denied = all(
        got.get(k) == "Operation not permitted"
        for k in ("keyctl", "bpf", "mount", "unshare", "perf_event_open", "ptrace")
    )
    cuda_ok = got.get("torch", "").startswith("cuda" if gpu else "cpu")
    return denied and cuda_ok and "seccomp" in bounds, f"rc={rc} bounds={sorted(bounds)} {got or text[-400:]}"


def fork_bomb(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    marker = f"bomb-{time.time_ns()}"
    started = time.monotonic()
    rc, text, bounds = child(
        f"""
        import os, time
        n = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                n += 1
        except OSError as e:
            print("forks", n, type(e).__name__, {marker!r})
    """,
        base,
        out,
        60,
    )
    time.sleep(0.5)
    left = [p for p in os.listdir("/proc") if p.isdigit() and marker.encode() in _cmdline(p)]
    m = re.search(r"forks (\d+)", text)
    forks = int(m.group(1)) if m else -1
    ok = 0 < forks < base.max_processes and not left and "pids" in bounds
    return ok, (
        f"forks={forks} (bound {base.max_processes}) survivors={len(left)} rc={rc} "
        f"{time.monotonic() - started:.1f}s bounds={sorted(bounds)} {text[-200:]!r}"
    )


def memory_bomb(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    rc, text, bounds = child(
        """
        import sys
        chunks = []
        for i in range(64):
            chunks.append(bytearray(256 << 20))   # zero-filled pages: touched, resident
            print("MiB", (i + 1) * 256, flush=True)
        print("survived")
    """,
        base.model_copy(update={"memory_bytes": GiB}),
        out,
        90,
    )
    reached = max([int(m) for m in re.findall(r"MiB (\d+)", text)] or [0])
    ok = "survived" not in text and rc is not None and rc != 0 and 0 < reached <= 1024 and "memory" in bounds
    return ok, f"rc={rc} reached={reached} MiB (bound 1024) bounds={sorted(bounds)}"


def native_admission(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    built = REPO / ".device-carry" / "native" / "silu_triton_aot"
    if not (built / "index.json").exists():
        return True, "skipped: no .device-carry/native (make device-carry-native)"
    from hotfloat.admission.admit import admit
    from hotfloat.compiler import load_build

    ev = (built / "index.json").read_text()
    rec = load_build(ev, {k["cubin"]: (built / k["cubin"]).read_bytes() for k in json.loads(ev)["kernels"]})
    rep = admit(load_bundle(REPO / "examples" / "silu_triton_aot"), rec, seed=7)
    return (rep.status.value == "PASS") == gpu, f"{rep.status.value} {rep.device} {rep.reasons[:2]}"


def uid_drop_fallback(base: SandboxPolicy, out: Path, gpu: bool) -> tuple[bool, str]:
    """Swaps the cgroup out of spawn for a moment, so it runs last, after the exploit children."""
    real = spawn_module.Cgroup.create
    spawn_module.Cgroup.create = lambda policy: cg.Cgroup([], set())
    try:
        rc, text, bounds = child(
            """
            import os
            try:
                import torch
                dev = str(torch.ones(4, device="cuda" if torch.cuda.is_available() else "cpu").sum().device)
            except Exception as e:
                dev = type(e).__name__
            n = 0
            try:
                while True:
                    if os.fork() == 0:
                        import time; time.sleep(30); os._exit(0)
                    n += 1
            except OSError:
                pass
            print("uid", os.getuid(), "device", dev, "forks", n)
        """,
            base,
            out,
            90,
        )
    finally:
        spawn_module.Cgroup.create = real
    m = re.search(r"uid (\d+) device (\S+) forks (\d+)", text)
    ok = (
        bool(m)
        and m.group(1) != "0"
        and m.group(2).startswith("cuda" if gpu else "cpu")
        and 0 < int(m.group(3)) < base.max_processes
        and "uid-drop" in bounds
    )
    return ok, f"rc={rc} bounds={sorted(bounds)} {text.strip()[-300:]!r}"


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


CHECKS = {
    "cgroup layout": cgroup_layout,
    "sandbox available (bwrap + seccomp, gpu policy)": available,
    "seccomp denies, CUDA works under it": seccomp_under_cuda,
    "fork bomb contained": fork_bomb,
    "memory bomb contained (no RLIMIT_AS: the memory cgroup alone)": memory_bomb,
    "native admission worker sandboxed (carried cubins)": native_admission,
}
"""Run while the exploit bundles verify, in this order."""
LAST = ("uid-drop fallback (forced: no cgroup), CUDA and a fork bomb as a fresh uid", uid_drop_fallback)
"""Run once the exploits are done: it swaps the cgroup out of spawn, which must not touch their runs."""
