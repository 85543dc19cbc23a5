"""Resident engines booted together, and the one rounds loop over them that qualification (hotfloat.qualify.protocol)
and calibration collection (hotfloat.qualify.calibrate_collect) both run.

A `Fleet` shows every engine the validator's model, starts each in its own sandbox under one isolation
(hotfloat.qualify.isolation), waits for them to boot concurrently, serves rounds (each engine's pass of every batch
timed alone on the round's prompts, within an allowance measured against the reference engines' passes), and stops
and closes them. A fault is charged to the engine that had it, by name; what that costs is the caller's to say.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor

from ..errors import InfrastructureError
from .checkpoint import model_dir
from .host import model_view
from .isolation import Isolation
from .records import EngineSpec, IsolationRecord, Workload
from .resident import Counts, EngineFault, Ready, ResidentEngine, Served
from .workload import kv_cap, prompts

OnFault = Callable[[str, EngineFault], bool]
"""on_fault(name of the engine at fault, its fault) -> whether the round goes on to the next engine."""


class Fleet:
    """Engines by name, from `boot` to `close` (a context manager: leaving it closes every engine and the isolation).

    `reference` names the engines whose passes set the stall allowance: once one has served, a pass must end within
    `stall_factor` times the slowest of theirs (never sooner than `stall_floor_s`, never later than
    `batch_timeout_s`); with none, every pass gets `batch_timeout_s`. `readings` adds the host's counters to every
    pass (calibration's diagnostics)."""

    def __init__(
        self,
        engine: EngineSpec,
        workload: Workload,
        options,
        *,
        reference: Collection[str] = (),
        readings: bool = False,
    ):
        self.engine, self.workload, self.options = engine, workload, options
        self.reference, self.readings = set(reference), readings
        self.engines: dict[str, ResidentEngine] = {}
        self.lifetimes: dict[str, float] = {}
        """Seconds each engine lived, boot included, filled in as it is closed."""
        self.slowest = 0.0
        """The slowest reference pass so far, seconds: what a stall is measured against."""
        self.model_dir = model_dir(engine)
        self.iso = Isolation.start(engine.device, required=options.gpu_isolation)

    def __enter__(self) -> Fleet:
        return self

    def __exit__(self, *exc) -> None:
        for name in list(self.engines):
            self.drop(name)
        self.iso.close()

    def __getitem__(self, name: str) -> ResidentEngine:
        return self.engines[name]

    def isolation(self) -> IsolationRecord:
        return self.iso.record()

    def boot(
        self, arms: dict[str, dict], cpus: list[list[int] | None], deadline: float
    ) -> dict[str, Ready | EngineFault]:
        """Starts one engine per arm (name -> what its spec adds: bundle, identity, twin, handicap, ...) on its CPU set
        and waits for every ready message; an engine that could not start or boot gets its fault instead."""
        o, w = self.options, self.workload
        base = dict(
            self.engine.model_dump(),
            threads=o.threads,
            mem_fraction=o.mem_fraction,
            kv_tokens=kv_cap(w),
            warmup=[
                (prompts(w, -1 - p, b), [r.max_new_tokens for r in batch])
                for p in range(w.warmup_passes)
                for b, batch in enumerate(w.batches)
            ],
            graph_batches=sorted({len(b) for b in w.batches}),
            model_dir=model_view(self.model_dir, sandboxed=o.sandboxed),
        )
        out: dict[str, Ready | EngineFault] = {}
        for (name, arm), cpu in zip(arms.items(), cpus, strict=True):
            try:
                self.engines[name] = ResidentEngine(
                    name,
                    {**base, **arm, "cpus": cpu},
                    device=self.engine.device,
                    kind=self.engine.kind,
                    sandboxed=o.sandboxed,
                    model_dir=self.model_dir,
                )
            except (InfrastructureError, OSError) as e:
                out[name] = EngineFault(f"the engine could not be started: {e}", kind="host", who=name)
            except EngineFault as f:
                out[name] = f

        def ready(name: str) -> Ready | EngineFault:
            e = self.engines[name]
            try:
                return e.ready(deadline)
            except EngineFault as f:
                return EngineFault(f"at boot: {f}", kind=f.kind, who=name)

        with ThreadPoolExecutor(max(1, len(self.engines))) as pool:
            out.update(zip(self.engines, pool.map(ready, list(self.engines)), strict=True))
        return {name: out[name] for name in arms}

    def round(self, r: int, order: list[str], on_fault: OnFault) -> dict[str, Served]:
        """Round r's pass (r < 0: prompts no timed round uses) on each engine in `order` still in the fleet, engine
        after engine, each alone; a fault goes to `on_fault`, which says whether the round goes on."""
        batches = [
            (prompts(self.workload, r, b), [q.max_new_tokens for q in batch])
            for b, batch in enumerate(self.workload.batches)
        ]
        served: dict[str, Served] = {}
        for name in order:
            if name not in self.engines:
                continue
            try:
                served[name] = self._pass(name, batches)
            except EngineFault as f:
                if not on_fault(f.who, f):
                    break
        return served

    def _pass(self, name: str, batches: list[tuple[list[list[int]], list[int]]]) -> Served:
        """Engine `name` serves every batch alone within the allowance; a fault names whoever had it."""
        e, allowed = self.engines[name], self.allowance()
        total, lat, outs = 0.0, [], []
        before = e.reading() if self.readings else None
        try:
            with self.iso.alone(list(self.engines.values()), e):
                deadline = time.monotonic() + allowed
                for ps, mx in batches:
                    got = e.serve(ps, mx, deadline - time.monotonic())
                    total += got.seconds
                    lat += got.latency_s
                    outs += got.outputs
        except EngineFault as f:
            who = f.who if f.who in self.engines else name
            why = str(f)
            if f.kind == "stalled" and who == name:
                why = f"stalled: no completion within {allowed:.1f} s of the pass's start ({self._basis()}): {f}"
            raise EngineFault(why, kind=f.kind, who=who) from None
        if name in self.reference:
            self.slowest = max(self.slowest, total)
        return Served(total, lat, outs, e.reading().since(before) if before else {})

    def allowance(self) -> float:
        """Seconds the next pass may take."""
        o = self.options
        if not self.slowest:
            return o.batch_timeout_s
        return min(o.batch_timeout_s, max(o.stall_floor_s, o.stall_factor * self.slowest))

    def _basis(self) -> str:
        if not self.slowest:
            return "no baseline pass measured yet"
        return (
            f"{self.options.stall_factor:g}x the slowest baseline pass, {self.slowest:.2f} s, "
            f"at least {self.options.stall_floor_s:g} s"
        )

    def stop(self, names: list[str], timeout_s: float) -> dict[str, Counts | EngineFault]:
        """Ends serving on each named engine; each reports its seam counts, or its fault."""
        out: dict[str, Counts | EngineFault] = {}
        for name in names:
            try:
                out[name] = self.engines[name].stop(timeout_s)
            except EngineFault as f:
                out[name] = f
        return out

    def drop(self, name: str) -> None:
        """Closes one engine and leaves it out of every later pass."""
        e = self.engines.pop(name)
        self.lifetimes[name] = e.lifetime_s
        e.close()
