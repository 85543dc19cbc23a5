"""A stand-in for the GPU watchdog on a machine without a GPU: the real request loop (hotfloat.qualify.isolation.watchdog.serve)
over a driver that behaves as the H200's was measured to (../shared/gpu-isolation, docs/device-runs.md):

- locking a stopped process blocks until it runs again (the real lock hangs); a process marked busy returns
  CUDA_ERROR_NOT_READY after the timeout; a process marked as holding a context locks (rc 0); any other process
  returns the driver's code for a process without CUDA;
- the probe's gap, NVML's context list and utilisation samples are what the test's state file says;
- a process's device memory is its resident memory (a CPU engine's model and buffers live there, so a bundle that
  hoards memory hoards it there), unless the state names a figure for it; the device is as big as the state says.

The test writes the state file (its path the first argument) as JSON: {"contexts": [pid] or "everyone" (every
process holds a context), "busy": [pid], "refuse": [pid], "stuck": [pid] (unlock fails), "gap_us": float,
"util": [{"pid", "ts", "sm"}], "device": {"name", "total", "used"}, "memory": {pid: bytes}, "hang": [op], "fail":
[op] (an error reply), "pid_offset": n (NVML's pids are the node's, n above ours: a pod without hostPID)}; the
stand-in appends what it was asked to `<state>.log` so the test can see the order of locks and unlocks."""

import json
import os
import socket
import sys
import time

from hotfloat.engine import hostload
from hotfloat.qualify.isolation import watchdog

NO_CUDA = 3
"""What the stand-in answers for a process without CUDA (CUDA_ERROR_NOT_INITIALIZED)."""


class StandinDriver:
    checkpoint, fn, nvml, why = True, True, True, {}

    def __init__(self):
        self.path = sys.argv[1]

    def _state(self, op: str = "") -> dict:
        """The test's state; a request the state says hangs never returns (a hung driver call)."""
        with open(self.path) as f:
            state = json.load(f)
        if op in state.get("hang", []):
            time.sleep(3600)
        if op in state.get("fail", []):
            raise RuntimeError(f"the stand-in's {op} failed")
        return state

    def _log(self, *what) -> None:
        with open(self.path + ".log", "a") as f:
            f.write(json.dumps(what) + "\n")

    def lock(self, pid, timeout_ms):
        t = time.perf_counter()
        while hostload.state(pid) in ("T", "t"):
            time.sleep(0.01)
        s = self._state()
        self._log("lock", pid)
        if pid in s.get("busy", []):
            time.sleep(timeout_ms / 1e3)
            return watchdog.CUDA_ERROR_NOT_READY, 1e3 * (time.perf_counter() - t)
        if pid in s.get("refuse", []):
            return 999, 0.1
        return (0 if pid in self.contexts() else NO_CUDA), 1e3 * (time.perf_counter() - t)

    def unlock(self, pid):
        self._log("unlock", pid)
        return (999 if pid in self._state().get("stuck", []) else 0), 0.1

    def probe(self, span_us):
        return {"gap_us": self._state("probe").get("gap_us", 3.0), "span_us": span_us, "wall_us": span_us + 40.0}

    def contexts(self):
        state = self._state("contexts")
        got = state.get("contexts", [])
        pids = (
            [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()] if got == "everyone" else got
        )
        return [p + state.get("pid_offset", 0) for p in pids]

    def sees_itself(self):
        """NVML lists the watchdog's probe context under its own pid, unless its pids are another namespace's."""
        return not self._state().get("pid_offset")

    def memory(self):
        s = self._state("memory")
        dev = {"name": "Stand-in GPU", "total": 80 << 30, "used": 0, **s.get("device", {})}
        given = s.get("memory", {})
        return {**dev, "procs": [[p, given.get(str(p), _rss(p))] for p in self.contexts()]}

    def util(self, since_us):
        return [u for u in self._state("util").get("util", []) if u["ts"] > since_us]


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


if __name__ == "__main__":
    watchdog.Driver = StandinDriver
    watchdog.serve(socket.socket(fileno=0))
