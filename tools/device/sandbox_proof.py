"""The sandbox on the GPU host (issue 19), run by tools/device/sandbox.sh: what the cgroup layout gives, the seccomp
filter under CUDA, a fork bomb and a memory bomb contained, and exploit bundles verified on cuda sandboxed.

Usage: python3 tools/device/sandbox_proof.py OUTDIR [--device cuda|cpu]  (cpu: a dry run on a CPU box, where the
GPU-only bundles are N/A). Writes OUTDIR/proof.json and OUTDIR/summary.txt; exits 1 if any row is not ok.
"""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from hotfloat.bundle import load_bundle
from hotfloat.sandbox import GiB, SandboxPolicy, child_env, ensure_available, spawn
from hotfloat.sandbox import cgroup as cg
from hotfloat.sandbox import process as spawn_module
from hotfloat.verify import VerifyOptions, verify_bundle

REPO = Path(__file__).resolve().parents[2]
ADVERSARIAL = REPO / "tests" / "adversarial" / "bundles"
rows: list[dict] = []
NO_SCAN = {"scan": False} if "scan" in VerifyOptions.model_fields else {}
"""The static scan would refuse most exploits before they run; this proves the runtime sandbox, so it is off."""


def row(name: str, ok: bool, detail: str, seconds: float) -> None:
    rows.append({"check": name, "ok": bool(ok), "seconds": round(seconds, 1), "detail": detail})
    print(f"[{'ok' if ok else 'FAIL'}] {name} ({seconds:.1f}s): {detail}", flush=True)


def check(name: str):
    def wrap(fn):
        started = time.monotonic()
        try:
            ok, detail = fn()
        except Exception as e:  # a crash of one check is that check's result, the others still run
            ok, detail = False, f"{type(e).__name__}: {e} | {traceback.format_exc(limit=3)[-600:]}"
        row(name, ok, detail, time.monotonic() - started)
        return fn

    return wrap


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


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    gpu = device == "cuda"
    base = SandboxPolicy(gpu=gpu, address_space_bytes=None, memory_bytes=8 * GiB, max_processes=128, cpu_seconds=120)

    exploits = {  # name -> (options, reason regex; None: any FAIL)
        "side_stream_deferred": ("quick", None),
        "graph_host_constant": ("quick", None),
        "stream_race_pointer_cache": ("quick", None),
        "fork_bomb": ("fp32", r"timed out"),
        "memory_bomb": ("fp32", r"alloc|died .*SIGKILL"),
        "read_etc_passwd": ("fp32", r"\('/etc/passwd', 'FileNotFoundError'\)"),
        "network_egress": ("fp32", r"egress: \['1\.1\.1\.1: OSError'"),
        "steal_parent_memory": ("fp32", r"parent processes reached: none"),
    }
    os.environ["HOTFLOAT_TEST_SECRET_TOKEN"] = "s3cr3t-canary"

    def verify(name: str):
        kind, pattern = exploits[name]
        started = time.monotonic()
        opts = dict(dtypes=["bf16"], max_shapes=3) if kind == "quick" else dict(dtypes=["fp32"], max_shapes=1)
        try:
            if name == "memory_bomb" and gpu:  # the CUDA default (64 GiB) takes longer to fill than the op deadline
                opts["policy"] = SandboxPolicy(gpu=True, address_space_bytes=None, memory_bytes=4 * GiB)
            report = verify_bundle(
                load_bundle(ADVERSARIAL / name),
                VerifyOptions(device=device, seed=20261203, sandboxed=True, timeout_s=10, **opts, **NO_SCAN),
            )
            (out / f"{name}.json").write_text(json.dumps(report.model_dump(mode="json"), indent=1))
            reasons = [r.reason for r in report.rows if r.status.value != "PASS"]
            want_na = kind == "quick" and not gpu
            ok = (
                report.status.value == ("N/A" if want_na else "FAIL")
                and report.sandboxed
                and (want_na or pattern is None or any(re.search(pattern, r) for r in reasons))
                and "s3cr3t" not in " ".join(reasons)
            )
            detail = f"{report.status.value} sandbox={'+'.join(report.bounds)}: {(reasons or [''])[0][:200]}"
        except Exception as e:
            ok, detail = False, f"{type(e).__name__}: {e}"
        return name, ok, detail, time.monotonic() - started

    pool = ThreadPoolExecutor(max_workers=len(exploits))
    running = pool.map(verify, exploits)  # submitted now: the bundles run while the checks below do

    @check("cgroup layout")
    def _():
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

    @check("sandbox available (bwrap + seccomp, gpu policy)")
    def _():
        ensure_available(base)
        return True, f"bwrap={os.environ.get('HOTFLOAT_BWRAP', 'PATH')}"

    @check("seccomp denies, CUDA works under it")
    def _():
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

    @check("fork bomb contained")
    def _():
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

    @check("memory bomb contained (no RLIMIT_AS: the memory cgroup alone)")
    def _():
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

    @check("native admission worker sandboxed (carried cubins)")
    def _():
        built = REPO / ".device-carry" / "native" / "silu_triton_aot"
        if not (built / "index.json").exists():
            return True, "skipped: no .device-carry/native (make device-carry-native)"
        from hotfloat.compiler import load_build
        from hotfloat.admission.admit import admit

        ev = (built / "index.json").read_text()
        rec = load_build(ev, {k["cubin"]: (built / k["cubin"]).read_bytes() for k in json.loads(ev)["kernels"]})
        rep = admit(load_bundle(REPO / "examples" / "silu_triton_aot"), rec, seed=7)
        return (rep.status.value == "PASS") == gpu, f"{rep.status.value} {rep.device} {rep.reasons[:2]}"

    for name, ok, detail, seconds in running:
        row(f"exploit {name}", ok, detail, seconds)
    pool.shutdown()

    # last: it swaps the cgroup out of spawn for a moment, which must not touch the exploit runs above
    @check("uid-drop fallback (forced: no cgroup), CUDA and a fork bomb as a fresh uid")
    def _():
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

    (out / "proof.json").write_text(json.dumps(rows, indent=1))
    table = [f"{'check':58} {'ok':4} {'s':>6}  detail"]
    table += [
        f"{r['check'][:58]:58} {'ok' if r['ok'] else 'FAIL':4} {r['seconds']:6.1f}  {r['detail'][:150]}" for r in rows
    ]
    (out / "summary.txt").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0 if all(r["ok"] for r in rows) else 1


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


if __name__ == "__main__":
    sys.exit(main())
