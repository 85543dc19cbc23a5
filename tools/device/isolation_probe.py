"""What the watchdog sees on this GPU (issue 31): the quiet probe on an idle GPU and beside a running or stopped
spinner of another process, the checkpoint lock's return codes (idle, busy, a process without CUDA), NVML's context
list and the spacing of its utilisation samples. Prints one JSON object (and a short table on stderr).

    python3 tools/device/isolation_probe.py > probe.json
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import time

from hotfloat.qualify.isolation.client import Watchdog

HELPER = r"""
import sys, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("spin"):
        torch.cuda._sleep(int(float(line.split()[1]) * 1.98e9)); print("spinning", flush=True)
"""


def probes(wd: Watchdog, n: int) -> dict:
    got = [wd.ask("probe", span_us=5000) for _ in range(n)]
    gaps = [g["gap_us"] for g in got]
    return {
        "n": n,
        "gap_us_median": statistics.median(gaps),
        "gap_us_max": max(gaps),
        "wall_us_median": statistics.median(g["wall_us"] for g in got),
    }


def main() -> None:
    out: dict = {}
    wd = Watchdog()
    out["hello"] = wd.ask("hello", wait_s=60)
    t = time.perf_counter()
    out["idle"] = probes(wd, 40)
    out["idle_probe_ms_each"] = 1e3 * (time.perf_counter() - t) / 40
    h = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert h.stdout.readline().strip() == "ready"
    plain = subprocess.Popen(["sleep", "60"])
    out["contexts_with_helper"] = wd.ask("contexts")
    out["helper_pid"], out["plain_pid"] = h.pid, plain.pid
    out["lock_idle"] = wd.ask("lock", pids=[h.pid, plain.pid], timeout_ms=1000)["results"]
    out["unlock_idle"] = wd.ask("unlock", pids=[h.pid])["results"]
    h.stdin.write("spin 6\n")
    h.stdin.flush()
    h.stdout.readline()
    time.sleep(0.2)
    out["beside_running_spinner"] = probes(wd, 5)
    out["lock_busy"] = wd.ask("lock", pids=[h.pid], timeout_ms=300, wait_s=20)["results"]
    since = int(time.time() * 1e6)
    os.kill(h.pid, signal.SIGSTOP)
    time.sleep(0.2)
    out["beside_stopped_spinner"] = probes(wd, 5)
    time.sleep(1.5)
    samples = wd.ask("util", since_us=since)["samples"]
    out["nvml_samples_stopped_spinner"] = samples
    ts = sorted({s["ts"] for s in samples})
    out["nvml_sample_spacing_ms"] = [round((b - a) / 1e3, 1) for a, b in zip(ts, ts[1:], strict=False)]
    os.kill(h.pid, signal.SIGCONT)
    h.kill()
    plain.kill()
    time.sleep(1.0)
    since = int(time.time() * 1e6)
    time.sleep(1.0)
    out["nvml_samples_after"] = wd.ask("util", since_us=since)["samples"]
    out["idle_again"] = probes(wd, 10)
    wd.close()
    print(json.dumps(out, indent=1))
    for k in ("idle", "beside_running_spinner", "beside_stopped_spinner", "idle_again"):
        print(
            f"{k:24} gap median {out[k]['gap_us_median']:9.1f} us  max {out[k]['gap_us_max']:9.1f} us", file=sys.stderr
        )
    print(f"lock idle {out['lock_idle']}  busy {out['lock_busy']}", file=sys.stderr)


if __name__ == "__main__":
    main()
