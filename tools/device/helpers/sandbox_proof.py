"""The sandbox on the GPU host (issue 19), run by the sandbox recipe: what the cgroup layout gives, the seccomp
filter under CUDA, a fork bomb and a memory bomb contained (sandbox_checks.py), and exploit bundles verified on cuda
sandboxed (here, while those checks run).

Usage: python3 tools/device/helpers/sandbox_proof.py OUTDIR [--device cuda|cpu]  (cpu: a dry run on a CPU box, where the
GPU-only bundles are N/A). Writes OUTDIR/proof.json and OUTDIR/summary.txt; exits 1 if any row is not ok.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sandbox_checks import CHECKS, LAST

from hotfloat.bundle import load_bundle
from hotfloat.sandbox import GiB, SandboxPolicy
from hotfloat.verify import VerifyOptions, verify_bundle

REPO = Path(__file__).resolve().parents[3]
ADVERSARIAL = REPO / "tests" / "adversarial" / "bundles"
rows: list[dict] = []
NO_SCAN = {"scan": False} if "scan" in VerifyOptions.model_fields else {}
"""The static scan would refuse most exploits before they run; this proves the runtime sandbox, so it is off."""
EXPLOITS = {  # name -> (options, reason regex; None: any FAIL)
    "side_stream_deferred": ("quick", None),
    "graph_host_constant": ("quick", None),
    "stream_race_pointer_cache": ("quick", None),
    "fork_bomb": ("fp32", r"timed out"),
    "memory_bomb": ("fp32", r"alloc|died .*SIGKILL"),
    "read_etc_passwd": ("fp32", r"\('/etc/passwd', 'FileNotFoundError'\)"),
    "network_egress": ("fp32", r"egress: \['1\.1\.1\.1: OSError'"),
    "steal_parent_memory": ("fp32", r"parent processes reached: none"),
}


def row(name: str, ok: bool, detail: str, seconds: float) -> None:
    rows.append({"check": name, "ok": bool(ok), "seconds": round(seconds, 1), "detail": detail})
    print(f"[{'ok' if ok else 'FAIL'}] {name} ({seconds:.1f}s): {detail}", flush=True)


def check(name: str, fn, *args) -> None:
    started = time.monotonic()
    try:
        ok, detail = fn(*args)
    except Exception as e:  # a crash of one check is that check's result, the others still run
        ok, detail = False, f"{type(e).__name__}: {e} | {traceback.format_exc(limit=3)[-600:]}"
    row(name, ok, detail, time.monotonic() - started)


def verify(name: str, device: str, out: Path) -> tuple[str, bool, str, float]:
    """One exploit bundle verified sandboxed (scan off): it must FAIL (N/A on cpu where it needs a GPU), for the
    expected reason, without the canary secret in any reason."""
    kind, pattern = EXPLOITS[name]
    gpu = device == "cuda"
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


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"
    gpu = device == "cuda"
    base = SandboxPolicy(gpu=gpu, address_space_bytes=None, memory_bytes=8 * GiB, max_processes=128, cpu_seconds=120)
    os.environ["HOTFLOAT_TEST_SECRET_TOKEN"] = "s3cr3t-canary"

    pool = ThreadPoolExecutor(max_workers=len(EXPLOITS))
    running = pool.map(lambda name: verify(name, device, out), EXPLOITS)  # the bundles run while the checks do
    for name, fn in CHECKS.items():
        check(name, fn, base, out, gpu)
    for name, ok, detail, seconds in running:
        row(f"exploit {name}", ok, detail, seconds)
    pool.shutdown()
    check(*LAST, base, out, gpu)

    (out / "proof.json").write_text(json.dumps(rows, indent=1))
    table = [f"{'check':58} {'ok':4} {'s':>6}  detail"]
    table += [
        f"{r['check'][:58]:58} {'ok' if r['ok'] else 'FAIL':4} {r['seconds']:6.1f}  {r['detail'][:150]}" for r in rows
    ]
    (out / "summary.txt").write_text("\n".join(table) + "\n")
    print("\n".join(table))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
