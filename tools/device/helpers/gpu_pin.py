"""Device check for `hotfloat serve ... --gpu N` (issue 36), run by the gpu_pin recipe: for each GPU index,
pin this process as the serve command does, start a GPU sandbox as qualification does, and compare what CUDA sees
inside with NVML's view of that index; then hostload's clock reading and the one-line error for a GPU not there.

Usage: python3 tools/device/helpers/gpu_pin.py OUTDIR [INDEX ...]  (default: every GPU NVML lists). One index per
subprocess, since pinning sets this process's CUDA_VISIBLE_DEVICES. Writes OUTDIR/gpu_pin.json; exits 1 unless
every row is ok.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent("""
    import ctypes, glob, os
    cu = ctypes.CDLL("libcuda.so.1")
    assert cu.cuInit(0) == 0, "cuInit failed"
    n = ctypes.c_int()
    cu.cuDeviceGetCount(ctypes.byref(n))
    bus = ctypes.create_string_buffer(64)
    cu.cuDeviceGetPCIBusId(bus, 64, 0)
    print(f"count={n.value} bus={bus.value.decode().lower()} nodes={','.join(sorted(glob.glob('/dev/nvidia[0-9]*')))}")
""")

ONE = textwrap.dedent("""
    import json, subprocess, sys, pynvml
    from hotfloat.engine import hostload
    from hotfloat.sandbox import SandboxPolicy, child_env, spawn
    from hotfloat.sandbox.gpus import device_nodes, pin
    index, child = int(sys.argv[1]), sys.argv[2]
    pynvml.nvmlInit()
    want = pynvml.nvmlDeviceGetPciInfo(pynvml.nvmlDeviceGetHandleByIndex(index)).busId
    want = (want.decode() if isinstance(want, bytes) else want).lower()
    gpu = pin(index)
    proc = spawn([sys.executable, "-I", "-c", child], SandboxPolicy(gpu=True, address_space_bytes=None), sandboxed=True,
                 binds=[], env=child_env({}, home="/tmp"), cwd="/tmp", stdout=subprocess.PIPE)
    try:
        out = proc.popen.communicate(timeout=120)[0].decode()
    finally:
        proc.kill()
    print(json.dumps({"index": index, "nvml_bus": want, "pinned": gpu.__dict__, "nodes": device_nodes(),
                      "child": out.strip(), "sm_mhz": hostload.sm_clock_mhz()}))
""")


def _bus(pci: str) -> str:
    """NVML writes an 8-digit PCI domain, CUDA and the driver 4: one form to compare."""
    domain, rest = pci.lower().split(":", 1)
    return f"{int(domain, 16):04x}:{rest}"


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    import pynvml

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    indices = [int(a) for a in sys.argv[2:]] or list(range(count))
    rows = []
    for index in indices:
        done = subprocess.run(
            [sys.executable, "-c", ONE, str(index), CHILD], capture_output=True, text=True, timeout=300
        )
        try:
            r = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            rows.append({"check": f"gpu {index}", "ok": False, "detail": done.stderr[-1500:]})
            continue
        seen = re.search(r"bus=(\S+)", r["child"])
        same = seen is not None and _bus(r["nvml_bus"]) == _bus(r["pinned"]["bus"]) == _bus(seen.group(1))
        nodes = re.search(r"nodes=(\S*)", r["child"])
        alone = (
            "count=1 " in r["child"] and nodes is not None and nodes.group(1) == f"/dev/nvidia{r['pinned']['minor']}"
        )
        rows.append({"check": f"gpu {index}", "ok": same and alone and r["sm_mhz"] > 0, "detail": r})
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "hotfloat.cli",
            "serve",
            "qualification",
            "--device",
            "cuda",
            "--gpu",
            str(count),
            "--socket",
            "/tmp/gpu-pin.sock",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    rows.append(
        {
            "check": f"--gpu {count} refused",
            "ok": bad.returncode == 2 and bad.stderr.count("\n") == 1,
            "detail": bad.stderr.strip(),
        }
    )
    (out / "gpu_pin.json").write_text(json.dumps(rows, indent=1))
    for r in rows:
        print(f"[{'ok' if r['ok'] else 'FAIL'}] {r['check']}: {json.dumps(r['detail'])[:300]}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
