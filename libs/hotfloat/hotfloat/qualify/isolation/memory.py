"""GPU memory, owned like GPU time: a plan that gives each resident engine a share of the device, and a ledger that
holds every engine to its share at ready and around every pass.

Memory is the one resource the driver does not isolate: an engine that takes more than it needs makes another one
run out, and an out-of-memory charged to the engine that ran out would turn a candidate's loss into a baseline's
fault (NO_DECISION, a free re-roll). So the plan is fixed before any engine boots, from the device's memory and the
number of engines it must hold at once (four with the gate's twin where they fit, else three with the twin booted
after the candidate's teardown); the baselines boot before the candidate (hotfloat.qualify.protocol); and NVML's
per-process memory, summed over each engine's process tree, is read at ready and around every pass. An engine over its
share is at fault whatever else happens, so a candidate that hoards is charged before any other engine can run short.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path
from typing import Annotated

from pydantic import Field

from ...errors import InfrastructureError
from ...record import Record
from ...engine.presets import PRESETS
from .resident import EngineFault

GiB = 1 << 30
OVERHEAD = {"sglang": 6 * GiB, "transformers": 1 * GiB}
"""What an engine holds beyond its weights and KV pool: the CUDA context, SGLang's decode graphs, prefill activations
and the caching allocator's slack (the llama-8b engines held 17-21 GiB on the H200 with 15.8 GiB of weights and KV);
for the CPU stand-in, its process's resident memory with torch loaded (what the test stand-in's driver reports)."""
HEADROOM_FRACTION = 0.02
"""Device memory no engine is given: the driver's own pools and allocator slack (at least 1 GiB)."""
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}


class MemoryPlan(Record):
    """How one device's memory is divided among the engines it holds at once; recorded in the evidence."""

    device: str
    """The GPU's name as NVML reports it."""
    total_bytes: Annotated[int, Field(gt=0)]
    in_use_bytes: Annotated[int, Field(ge=0)]
    """Held before any engine booted: the watchdog's context and anything else on the device."""
    headroom_bytes: Annotated[int, Field(ge=0)]
    need_bytes: Annotated[int, Field(gt=0)]
    """What one engine of this model and workload is expected to hold: weights, KV pool and `OVERHEAD`."""
    resident: Annotated[int, Field(ge=1)]
    """Engines on the device at once."""
    share_bytes: Annotated[int, Field(gt=0)]
    """Each engine's ceiling: the usable memory divided evenly among the resident engines."""
    twin_apart: bool = False
    """The gate's twin and the candidate are never resident together (a device too small for four): T serves before
    C boots, or after C's teardown (hotfloat.qualify.protocol)."""


class EngineMemory(Record):
    """One engine's device memory as the ledger read it."""

    ready_bytes: int = 0
    peak_bytes: int = 0


class MemoryRecord(Record):
    """The plan and what each engine held, for the evidence."""

    plan: MemoryPlan
    engines: dict[str, EngineMemory] = {}
    readings: int = 0


def need_bytes(kind: str, preset: str, dtype: str, kv_tokens: int, model_dir: str | None) -> int:
    """One engine's expected holding: the checkpoint's weight files where there is one, else the preset's parameter
    count, plus the KV pool the workload is given and the engine's `OVERHEAD`."""
    config = _config(preset, model_dir)
    esize = DTYPE_BYTES[dtype]
    if model_dir and (files := list(Path(model_dir).glob("*.safetensors"))):
        weights = sum(f.stat().st_size for f in files)
    else:
        weights = _parameters(config) * esize
    heads = config["num_attention_heads"]
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    kv = 2 * config["num_hidden_layers"] * config.get("num_key_value_heads", heads) * head_dim * esize * kv_tokens
    return weights + kv + OVERHEAD[kind]


def plan(device: str, total: int, in_use: int, need: int, *, wanted: int, least: int) -> MemoryPlan:
    """As many engines as fit, up to `wanted`, each given an even share of what is usable; a device that cannot hold
    `least` is refused in one line that says what it has and what a qualification needs."""
    headroom = max(GiB, int(HEADROOM_FRACTION * total))
    usable = total - in_use - headroom
    fits = max(0, usable // need)
    if fits < least:
        raise InfrastructureError(
            f"{device}: {_gib(total)} with {_gib(in_use)} in use holds {fits} engine(s) of {_gib(need)}; "
            f"this run needs {least} resident at once"
        )
    resident = min(wanted, fits)
    return MemoryPlan(
        device=device,
        total_bytes=total,
        in_use_bytes=in_use,
        headroom_bytes=headroom,
        need_bytes=need,
        resident=resident,
        share_bytes=usable // resident,
        twin_apart=resident < wanted,
    )


class Ledger:
    """Each engine's device memory against the plan's share. Engines outside `trusted` (the baselines) are checked
    first, so when a candidate and a baseline are both over, the candidate, whose hoarding squeezed the other, is
    charged."""

    def __init__(self, memory_plan: MemoryPlan, trusted: frozenset[str] = frozenset()):
        self.plan, self.trusted = memory_plan, trusted
        self.engines: dict[str, EngineMemory] = {}
        self.readings = 0

    def check(self, usage: dict[str, int], at: str, ready: Collection[str] = ()) -> None:
        """Records one reading (engine name -> bytes; `ready`: the engines that just booted) and charges the first
        engine over its share."""
        self.readings += 1
        for name, used in usage.items():
            e = self.engines.setdefault(name, EngineMemory())
            self.engines[name] = e.model_copy(
                update={"peak_bytes": max(e.peak_bytes, used), **({"ready_bytes": used} if name in ready else {})}
            )
        for name in sorted(usage, key=lambda n: n in self.trusted):
            if usage[name] > self.plan.share_bytes:
                raise EngineFault(
                    f"memory: engine {name} held {_gib(usage[name])} of GPU memory {at}, over its share of "
                    f"{_gib(self.plan.share_bytes)} ({self.plan.resident} engines on {_gib(self.plan.total_bytes)})",
                    kind="memory",
                    who=name,
                )

    def over(self, usage: dict[str, int]) -> list[str]:
        """Engines over their share in a reading, the untrusted first."""
        return sorted((n for n, u in usage.items() if u > self.plan.share_bytes), key=lambda n: n in self.trusted)

    def record(self) -> MemoryRecord:
        return MemoryRecord(plan=self.plan, engines=dict(self.engines), readings=self.readings)


def usage(procs: list[list], trees: dict[str, list[int]]) -> dict[str, int]:
    """Bytes per engine: NVML's per-process memory summed over each engine's process tree. A process whose memory
    NVML cannot tell makes the reading unusable: qualification cannot own memory on such a host."""
    held = {int(pid): used for pid, used in procs}
    out = {}
    for name, pids in trees.items():
        unknown = [p for p in pids if p in held and held[p] is None]
        if unknown:
            raise InfrastructureError(f"NVML cannot tell the GPU memory of engine {name}'s process {unknown[0]}")
        out[name] = sum(held.get(p) or 0 for p in pids)
    return out


def _config(preset: str, model_dir: str | None) -> dict:
    if model_dir and (Path(model_dir) / "config.json").is_file():
        return json.loads((Path(model_dir) / "config.json").read_text())
    return PRESETS[preset]


def _parameters(c: dict) -> int:
    """Parameters of a decoder-only transformer from its config (embeddings, attention, MLP or experts, norms)."""
    h, layers, heads = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    head_dim = c.get("head_dim") or h // heads
    kv = c.get("num_key_value_heads", heads)
    attention = 2 * h * heads * head_dim + 2 * h * kv * head_dim
    experts = c.get("num_local_experts") or c.get("num_experts") or 1
    inter = c.get("moe_intermediate_size") or c["intermediate_size"]
    embed = c["vocab_size"] * h * (1 if c.get("tie_word_embeddings") else 2)
    return embed + layers * (attention + 3 * h * inter * experts + 2 * h) + h


def _gib(n: int) -> str:
    return f"{n / GiB:.1f} GiB"
