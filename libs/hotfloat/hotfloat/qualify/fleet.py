"""Resident engines booted together, and the one rounds loop over them that qualification (hotfloat.qualify.protocol)
and calibration collection (hotfloat.qualify.calibrate.collect) both run.

A `Fleet` divides the device's memory among the engines it will hold at once (`plan_memory`), shows every engine the
validator's model, starts each in its own sandbox under one isolation (hotfloat.qualify.isolation), waits for a group
of them to boot concurrently (the caller boots trusted engines before untrusted ones), reads every engine's memory
once a group is ready, serves rounds (each engine's pass of every batch timed alone on the round's prompts, within an
allowance measured against the reference engines' passes), and stops and closes them. A fault is charged to the engine
that had it, by name; what that costs is the caller's to say.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..errors import InfrastructureError
from .checkpoint import model_dir
from .host import CACHE, ENV_ROOT, model_view
from .isolation import Isolation
from .isolation.memory import Ledger, MemoryPlan, MemoryRecord, need_bytes, plan
from .records import EngineSpec, IsolationRecord, Workload
from .isolation.resident import Counts, EngineFault, Ready, ResidentEngine, Served
from .workload import kv_cap, kv_need, prompts

RELEASE_S = 30.0
"""How long a dropped engine's device memory may take to come back before the host is at fault."""

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

    def plan_memory(self, wanted: int, least: int) -> MemoryPlan | None:
        """Divides the device among `wanted` resident engines, or as few as `least` where `wanted` do not fit (the
        caller then boots the rest once others are gone), and holds every engine to its share from now on; None
        where no driver reports memory (CPU engines). A device that cannot hold `least` is an InfrastructureError."""
        try:
            dev = self.iso.device_memory()
        except (TimeoutError, InfrastructureError) as e:
            raise InfrastructureError(f"the watchdog could not read the device's memory: {e}") from None
        if dev is None:
            return None
        e = self.engine
        need = need_bytes(e.kind, e.preset, e.dtype, kv_cap(self.workload), self.model_dir)
        divided = plan(dev["name"], dev["total"], dev["used"], need, wanted=wanted, least=least)
        self.iso.hold(Ledger(divided, trusted=frozenset(self.reference)))
        return divided

    def memory(self) -> MemoryRecord | None:
        return self.iso.ledger.record() if self.iso.ledger else None

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
        """Starts one engine per arm (name -> what its spec adds: bundle, identity, twin, handicap, ...) on its CPU set,
        waits for every ready message and reads every engine's memory; an engine that could not start or boot, or is
        over its share, gets its fault instead (an engine booted earlier too, under its own name)."""
        o, w = self.options, self.workload
        base = dict(
            self.engine.model_dump(),
            threads=o.threads,
            mem_fraction=o.mem_fraction,
            kv_tokens=kv_cap(w),
            kv_need=kv_need(w),
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

        booting = [n for n in arms if n in self.engines and n not in out]
        with ThreadPoolExecutor(max(1, len(booting))) as pool:
            out.update(zip(booting, pool.map(ready, booting), strict=True))
        up = [self.engines[n] for n in self.engines if not isinstance(out.get(n), EngineFault)]
        if up:
            try:
                trees = {e.name: e.pids() for e in up}
                self.iso.check_memory(trees, "at ready", owner=booting[0] if booting else up[0].name, ready=booting)
            except EngineFault as f:
                out[f.who if f.who in self.engines else up[0].name] = f
        return {**{name: out[name] for name in arms}, **out}

    def warm_caches(self, name: str, dest: Path | None = None) -> str:
        """Copies engine `name`'s JIT caches into `dest`, by default the validator's warm caches
        ($HOTFLOAT_ENGINE_ROOT/cache, hotfloat.qualify.host), once per machine, so engines booted after it skip the
        compilation. The caller names a stock engine with no bundle: no candidate code ever ran in its sandbox. Each
        file lands by rename, so an engine copying them meanwhile copies whole files only."""
        root = os.environ.get(ENV_ROOT)
        if dest is None and not root:
            return "warm caches: no engine root"
        dest = dest or Path(root) / "cache"
        if (dest / ".filled").exists():
            return "warm caches: already filled"
        e = self.engines[name]
        roots = [Path(f"/proc/{p}/root{CACHE}") for p in reversed(e.pids())] if self.options.sandboxed else []
        src = next((r for r in roots or [e.workdir / "cache"] if os.path.isdir(r)), None)  # /proc may refuse us
        if src is None:
            return f"warm caches: {name} has no cache"
        try:
            files = _merge(src, dest)
            (dest / ".filled").write_text(f"{name}\n")
        except OSError as err:
            return f"warm caches from {name} failed: {err}"
        return f"warm caches: {files} files of {name}'s in {dest}"

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

    def release(self, name: str, timeout_s: float = RELEASE_S) -> bool:
        """Drops engine `name` and waits until the device charges no memory to its processes, so an engine booted
        into its share finds it free; False when the memory is still held at the timeout (the host's fault)."""
        pids = set(self.engines[name].pids())
        self.drop(name)
        deadline = time.monotonic() + timeout_s
        while (dev := self.iso.device_memory()) is not None:
            if not pids & {int(pid) for pid, _ in dev["procs"]}:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True


def _merge(src: Path, dest: Path) -> int:
    """Copies the tree at `src` into `dest`, each file through a temporary name and a rename; returns files copied.
    Modification times travel with the files: ninja (tvm-ffi's and FlashInfer's JIT builds) rebuilds a module whose
    source looks newer than its build log's entry, so fresh times cost every seeded engine its compile again."""
    n = 0
    for path in sorted(src.rglob("*")):
        target = dest / path.relative_to(src)
        if path.is_dir() and not path.is_symlink():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
        if path.is_symlink():
            os.symlink(os.readlink(path), tmp)
        else:
            shutil.copy2(path, tmp)
        os.replace(tmp, target)
        n += 1
    return n
