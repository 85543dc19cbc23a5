"""The GPU watchdog: a small trusted process that makes the driver calls isolation needs, never the validator itself.

Why a process of its own: the driver's checkpoint lock of a process that is already stopped hangs and holds the
caller's driver lock until that process runs again (measured on the H200, ../shared/gpu-isolation), so a hang here
costs a process the validator can kill, not the validator. It loads libcuda and NVML through ctypes (no torch: it
starts in a fraction of a second) and answers one request at a time over a socketpair on fd 0 (hotfloat.engine.wire):

- `hello`: what this host offers: the checkpoint API, NVML, the quiet probe (each with why not), its own pid, and
  whether NVML lists its probe's context under that pid (`sees_itself`); in a pod NVML and the checkpoint lock speak
  the node's pids, which the watchdog maps through the node's procfs when HOTFLOAT_HOST_PROC names it
  (hotfloat.qualify.isolation.pids), and without that map no engine could be locked or charged its memory;
- `lock` / `unlock` pids: cuCheckpointProcessLock with a timeout (it waits for the process's submitted GPU work and
  then blocks its CUDA calls; CUDA_ERROR_NOT_READY when work is still running at the timeout) and its inverse;
- `probe`: one single-thread kernel reads %globaltimer in a loop for a few milliseconds; the longest gap between two
  reads is how long another context held the GPU (contexts are time-sliced, so a busy one shows as a gap);
- `contexts` / `util`: NVML's processes holding a context on the device, and their SM utilisation samples since a
  timestamp (a stopped process whose kernel still runs shows SM > 0);
- `memory`: the device's name, total and used memory, and the GPU memory NVML charges to each process holding a
  context (hotfloat.qualify.isolation.memory holds each engine to its share of the device with it).
"""

from __future__ import annotations

import ctypes
import os
import socket
import time

from ...engine import wire
from .pids import ENV_HOST_PROC, from_env

CUDA_ERROR_NOT_READY = 600
NVML_ERROR_INSUFFICIENT_SIZE = 7
NVML_VALUE_NOT_AVAILABLE = 2**64 - 1
"""What NVML puts in `usedGpuMemory` where it cannot tell a process's memory (some virtualised hosts)."""
PROBE_PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry quiet(.param .u64 out, .param .u64 span)
{
  .reg .u64 %t0, %t, %prev, %gap, %worst, %end, %span, %p;
  .reg .pred %more;
  ld.param.u64 %p, [out];
  ld.param.u64 %span, [span];
  mov.u64 %t0, %globaltimer;
  add.u64 %end, %t0, %span;
  mov.u64 %prev, %t0;
  mov.u64 %worst, 0;
LOOP:
  mov.u64 %t, %globaltimer;
  sub.u64 %gap, %t, %prev;
  max.u64 %worst, %worst, %gap;
  mov.u64 %prev, %t;
  setp.lt.u64 %more, %t, %end;
  @%more bra LOOP;
  cvta.to.global.u64 %p, %p;
  st.global.u64 [%p], %worst;
  sub.u64 %gap, %t, %t0;
  st.global.u64 [%p+8], %gap;
  ret;
}
"""


class _LockArgs(ctypes.Structure):
    _fields_ = [("timeoutMs", ctypes.c_uint), ("reserved0", ctypes.c_uint), ("reserved1", ctypes.c_uint64 * 7)]


class _UnlockArgs(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_uint64 * 8)]


class _UtilSample(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("timeStamp", ctypes.c_ulonglong),
        ("smUtil", ctypes.c_uint),
        ("memUtil", ctypes.c_uint),
        ("encUtil", ctypes.c_uint),
        ("decUtil", ctypes.c_uint),
    ]


class _ProcInfo(ctypes.Structure):
    _fields_ = [
        ("pid", ctypes.c_uint),
        ("usedGpuMemory", ctypes.c_ulonglong),
        ("gpuInstanceId", ctypes.c_uint),
        ("computeInstanceId", ctypes.c_uint),
    ]


class _MemInfo(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class Driver:
    """The three capabilities, each None-or-working; `why` says what is missing where one is not."""

    def __init__(self):
        self.why: dict[str, str] = {}
        self.cu = self.nvml = self.handle = self.fn = self.buf = self.pids = None
        self.checkpoint = False
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
            self._ok(self.cu.cuInit(0), "cuInit")
        except (OSError, RuntimeError) as e:
            self.cu = None
            self.why = {k: f"no CUDA driver: {e}" for k in ("checkpoint", "probe", "nvml")}
            return
        self.checkpoint = all(hasattr(self.cu, f"cuCheckpointProcess{n}") for n in ("Lock", "Unlock"))
        if not self.checkpoint:
            self.why["checkpoint"] = "this driver has no checkpoint API (cuCheckpointProcessLock, driver 550 or newer)"
        try:
            self._probe_setup()
        except RuntimeError as e:
            self.fn, self.why["probe"] = None, str(e)
        try:
            self._nvml_setup()
        except (OSError, RuntimeError) as e:
            self.nvml, self.why["nvml"] = None, str(e)
        try:
            self.pids = from_env()
        except (OSError, RuntimeError, ValueError) as e:
            self.pids, self.why["pids"] = None, f"{ENV_HOST_PROC}: {e}"

    def _ok(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUDA error {rc}")

    def _probe_setup(self) -> None:
        cu, dev, ctx, mod = self.cu, ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p()
        self._ok(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.device = dev.value
        self._ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        self._ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        self._ok(cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(PROBE_PTX + b"\0")), "cuModuleLoadData")
        fn, buf = ctypes.c_void_p(), ctypes.c_uint64()
        self._ok(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"quiet"), "cuModuleGetFunction")
        self._ok(cu.cuMemAlloc_v2(ctypes.byref(buf), ctypes.c_size_t(16)), "cuMemAlloc")
        self.fn, self.buf = fn, buf

    def _nvml_setup(self) -> None:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit failed")
        bus = ctypes.create_string_buffer(64)
        self._ok(self.cu.cuDeviceGetPCIBusId(bus, 64, self.device), "cuDeviceGetPCIBusId")
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByPciBusId_v2(bus, ctypes.byref(handle)) != 0:
            raise RuntimeError(f"NVML does not know the device at {bus.value.decode()}")
        self.nvml, self.handle = nvml, handle

    def _processes(self) -> list[tuple[int, int | None]]:
        """(pid in this namespace, GPU memory or None) of every other context holder of this namespace: NVML's
        node pids mapped through the node's procfs where one is configured (a pod), holders outside it left out."""
        out = []
        for info in self._raw():
            local = self.pids.to_local(info.pid) if self.pids else info.pid
            if local is not None and local != os.getpid():
                out.append((local, None if info.usedGpuMemory == NVML_VALUE_NOT_AVAILABLE else int(info.usedGpuMemory)))
        return out

    def sees_itself(self) -> bool | None:
        """Whether NVML lists this process's own context (its probe's) under this process's node pid; None without
        NVML or a context. False means NVML speaks of another pid namespace than the one mapped."""
        if self.nvml is None or self.fn is None:
            return None
        me = self.pids.to_host(os.getpid()) if self.pids else os.getpid()
        return me in [p.pid for p in self._raw()]

    def _raw(self) -> list[_ProcInfo]:
        """Every context holder as NVML lists it, however many: a list that outgrows the buffer is asked for again,
        larger (an engine that starts hundreds of CUDA processes must not turn the reading into an error the host is
        charged with)."""
        fn = (
            getattr(self.nvml, "nvmlDeviceGetComputeRunningProcesses_v3", None)
            or self.nvml.nvmlDeviceGetComputeRunningProcesses_v2
        )
        size = 256
        for _ in range(8):
            n = ctypes.c_uint(size)
            infos = (_ProcInfo * size)()
            rc = fn(self.handle, ctypes.byref(n), infos)
            if rc == NVML_ERROR_INSUFFICIENT_SIZE:
                size = max(2 * size, n.value + 64)
                continue
            if rc != 0:
                raise RuntimeError(f"nvmlDeviceGetComputeRunningProcesses failed ({rc})")
            return [infos[i] for i in range(n.value)]
        raise RuntimeError("nvmlDeviceGetComputeRunningProcesses kept growing")

    def lock(self, pid: int, timeout_ms: int) -> tuple[int, float]:
        args = _LockArgs(timeoutMs=timeout_ms)
        t = time.perf_counter()
        rc = self.cu.cuCheckpointProcessLock(ctypes.c_int(self._host(pid)), ctypes.byref(args))
        return rc, 1e3 * (time.perf_counter() - t)

    def unlock(self, pid: int) -> tuple[int, float]:
        t = time.perf_counter()
        rc = self.cu.cuCheckpointProcessUnlock(ctypes.c_int(self._host(pid)), ctypes.byref(_UnlockArgs()))
        return rc, 1e3 * (time.perf_counter() - t)

    def _host(self, pid: int) -> int:
        """The driver's pid of this namespace's process (the same pid without a map; 0, which no process has, for
        one that is gone)."""
        return (self.pids.to_host(pid) or 0) if self.pids else pid

    def probe(self, span_us: int) -> dict:
        """Runs the timer loop for `span_us`; returns its longest gap, its span and the host's wait for it (µs)."""
        out, span = ctypes.c_uint64(self.buf.value), ctypes.c_uint64(span_us * 1000)
        params = (ctypes.c_void_p * 2)(
            ctypes.cast(ctypes.byref(out), ctypes.c_void_p), ctypes.cast(ctypes.byref(span), ctypes.c_void_p)
        )
        t = time.perf_counter()
        self._ok(self.cu.cuLaunchKernel(self.fn, 1, 1, 1, 1, 1, 1, 0, None, params, None), "cuLaunchKernel")
        self._ok(self.cu.cuCtxSynchronize(), "cuCtxSynchronize")
        wall = 1e6 * (time.perf_counter() - t)
        host = (ctypes.c_uint64 * 2)()
        self._ok(self.cu.cuMemcpyDtoH_v2(host, self.buf, ctypes.c_size_t(16)), "cuMemcpyDtoH")
        return {"gap_us": host[0] / 1e3, "span_us": host[1] / 1e3, "wall_us": wall}

    def contexts(self) -> list[int]:
        """Pids holding a compute context on the device (NVML), this process left out."""
        return [pid for pid, _ in self._processes()]

    def memory(self) -> dict:
        """The device's name, total and used bytes, and each context holder's GPU memory in bytes (None where NVML
        cannot tell it): what every engine's share is measured against."""
        info, name = _MemInfo(), ctypes.create_string_buffer(96)
        if self.nvml.nvmlDeviceGetMemoryInfo(self.handle, ctypes.byref(info)) != 0:
            raise RuntimeError("nvmlDeviceGetMemoryInfo failed")
        if self.nvml.nvmlDeviceGetName(self.handle, name, 96) != 0:
            raise RuntimeError("nvmlDeviceGetName failed")
        procs = [[pid, used] for pid, used in self._processes()]
        return {"name": name.value.decode(errors="replace"), "total": info.total, "used": info.used, "procs": procs}

    def util(self, since_us: int) -> list[dict]:
        """NVML per-process utilisation samples newer than `since_us` (its own clock: microseconds since the epoch);
        asked again, larger, when more samples arrived between the count and the read."""
        samples, n = None, ctypes.c_uint(0)
        for _ in range(8):
            rc = self.nvml.nvmlDeviceGetProcessUtilization(
                self.handle, samples, ctypes.byref(n), ctypes.c_ulonglong(since_us)
            )
            if rc == 6 or (samples is None and n.value == 0):  # NVML_ERROR_NOT_FOUND: no sample since then
                return []
            if rc == 0 and samples is not None:
                mapped = [(self.pids.to_local(s.pid) if self.pids else s.pid, s) for s in samples[: n.value]]
                return [
                    {"pid": pid, "ts": s.timeStamp, "sm": s.smUtil}
                    for pid, s in mapped
                    if pid is not None and pid != os.getpid()
                ]
            if rc not in (0, NVML_ERROR_INSUFFICIENT_SIZE):
                raise RuntimeError(f"nvmlDeviceGetProcessUtilization failed ({rc})")
            n = ctypes.c_uint(n.value + 64)
            samples = (_UtilSample * n.value)()
        raise RuntimeError("nvmlDeviceGetProcessUtilization kept growing")


def serve(conn: socket.socket) -> None:
    """Answers requests until the validator closes the channel; a failing call is reported, never fatal."""
    drv = Driver()
    while True:
        try:
            msg = wire.recv(conn)
        except wire.WireError:
            return
        op = msg.get("op")
        try:
            if op == "hello":
                reply = {
                    "checkpoint": drv.checkpoint,
                    "probe": drv.fn is not None,
                    "nvml": drv.nvml is not None,
                    "why": drv.why,
                    "pid": os.getpid(),
                    "sees_itself": drv.sees_itself(),
                }
            elif op == "lock":
                reply = {"results": [[p, *drv.lock(p, int(msg["timeout_ms"]))] for p in msg["pids"]]}
            elif op == "unlock":
                reply = {"results": [[p, *drv.unlock(p)] for p in msg["pids"]]}
            elif op == "probe":
                reply = drv.probe(int(msg["span_us"]))
            elif op == "contexts":
                reply = {"pids": drv.contexts()}
            elif op == "memory":
                reply = drv.memory()
            elif op == "util":
                reply = {"samples": drv.util(int(msg["since_us"])), "now_us": int(time.time() * 1e6)}
            else:
                reply = {"error": f"unknown op {op!r}"}
        except (RuntimeError, KeyError, TypeError, ValueError, AttributeError) as e:
            reply = {"error": f"{type(e).__name__}: {e}"}
        wire.send(conn, {"type": op, **reply})


if __name__ == "__main__":
    serve(socket.socket(fileno=0))
