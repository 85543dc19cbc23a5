"""No engine works while another is timed: checked around every timed pass, never assumed.

SIGSTOP stops an idle engine's threads but not a kernel it already put on the GPU, and without MPS the GPU
time-slices between contexts: one left-running, one-warp kernel of a stopped process slowed another process's work
1.85x on the H200 (../shared/gpu-isolation). So before a pass, every other engine is

1. locked through the driver's checkpoint API (by the watchdog process, hotfloat.qualify.isolation.watchdog): the lock
   waits for the engine's submitted GPU work and then blocks its CUDA calls; work still running at the timeout is that
   engine's fault (the candidate's: FAIL). A process NVML lists with a context must lock, or its engine is at fault;
2. stopped (SIGSTOP, every process of its tree); a process that was stopped before we stopped it stopped itself,
   which would hang the lock: its engine's fault. Once stopped, no process can make a context, so NVML's list is read
   again: a holder that was not locked made its context in between, its engine's fault.

The engine about to be timed is drained too (locked and unlocked at once), so every pass starts on an idle GPU. Then a
quiet probe (a timer loop on the GPU whose longest gap shows another context holding it: 0.0 us idle, 2.4 ms beside
another context's kernel on the H200) must find the GPU quiet before the pass (else a context outside the
qualification holds it: the host's fault, NO_DECISION); it runs again after the pass, recorded only. NVML's
per-process SM utilisation during the pass is a second witness: a stopped engine's pid using SMs is that engine's
fault, an unknown pid the host's. After the pass the others are
continued, then unlocked (never lock a stopped process: the lock hangs). All of it is outside the timed window; its
cost per pass is recorded. Where a memory plan is held (hotfloat.qualify.isolation.memory), every engine's GPU memory is read
once the others are stopped and again after the pass: an engine over its share is at fault before anyone can run
short because of it.

Whatever the watchdog cannot explain has an owner too. A probe gap or an NVML sample from a process that has exited
since is the timed engine's (every other engine was stopped and could neither start nor end a process), a failed
unlock is the unlocked engine's, and a watchdog reply that does not come (`contexts`, `util`, `probe`, `memory`) is
charged to the engine it was asked about (the one being locked, else the one being timed), never a crash. Without the checkpoint API (CPU, old drivers) only the stop is in force, and the evidence
says so; on CUDA that refuses to qualify unless the caller opts out.

A module each: `resident` (an engine seen from the validator: its sandbox, channel, pause and resume), `alone` (the
isolation around a pass and the witnesses that name who held the GPU), `memory` (each engine's share of the device),
`watchdog` (the process that makes the driver calls) and `client` (the validator's handle on it).
"""

from .alone import Isolation

__all__ = ["Isolation"]
