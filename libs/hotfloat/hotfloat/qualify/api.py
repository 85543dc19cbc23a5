"""`qualify_bundle`: the complete-engine A/B of one candidate, as the CLI and the Qualification service call it.

Protocol: B C B (C B ...) in fresh engine processes with the same workload and warm-up; the validator picks roles,
prompts and timing. After every run `judge` says whether the evidence decides; the loop stops at the first decision
or when the pair budget is spent. The candidate bundle is armed only in C processes, and every engine process runs
inside the candidate sandbox (hotfloat.qualify.host); without one, qualification refuses to run unless the caller
opts out with `sandboxed=False`, which the evidence records.
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..bundle import Bundle, load_bundle
from ..errors import InfrastructureError
from ..sandbox import ensure_available
from .decision import judge
from .engine import PRESETS
from .host import server_policy, staged
from .records import Decision, Decode, EngineSpec, Evidence, QualifyResult, Record, Role, RuleConfig, RunFrame
from .runner import Launch, run_engine
from .workload import SHAPES, make_workload

Progress = Callable[[str, int, int], None]
"""progress(description, runs done, most runs possible)."""


class QualifyOptions(Record):
    """What the validator chooses for a qualification; the candidate chooses none of it."""

    preset: str = "tiny"
    """Engine model preset (hotfloat.qualify.engine.PRESETS)."""
    device: Literal["cpu", "cuda"] = "cpu"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    decode: Decode | None = None
    """Decode mode of B and C alike (EngineSpec.decode); None: CUDA graphs on CUDA, eager on CPU."""
    shapes: str = "tiny"
    """Workload request mix (hotfloat.qualify.workload.SHAPES)."""
    passes: Annotated[int, Field(ge=1, le=64)] = 2
    warmup_passes: Annotated[int, Field(ge=0, le=16)] = 1
    seed: int | None = None
    """Workload prompt seed; None draws a secret one."""
    rule: RuleConfig = RuleConfig(logprob_tol=1e-3)
    warm: bool = True
    """Fork engines from one fork server that preloaded torch and transformers; False pays a cold start per run."""
    sandboxed: bool = True
    """Engine processes run in the candidate sandbox and qualification fails closed without one; False (logged
    as a warning, recorded in the evidence) runs them with the validator's files, environment and network."""
    startup_timeout_s: Annotated[float, Field(gt=0)] = 600.0
    batch_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    threads: Annotated[int, Field(ge=1, le=256)] = 1
    extra_passes: dict[Role, Annotated[int, Field(ge=0, le=1024)]] = {}
    """Calibration only: role -> extra stock activation passes per MLP call, a known speed difference injected by
    the validator (e.g. a slower B to exercise the PASS path on hardware where nothing is faster)."""

    @model_validator(mode="after")
    def _engine_is_valid(self):
        self.engine()  # e.g. graph decode on CPU is refused here, before any engine process starts
        return self

    def engine(self) -> EngineSpec:
        """The engine B and C both run."""
        return EngineSpec(preset=self.preset, dtype=self.dtype, device=self.device, decode=self.decode)


def qualify_bundle(bundle: Bundle | str | os.PathLike, options: QualifyOptions | None = None, *,
                   baseline: Bundle | str | os.PathLike | None = None, progress: Progress | None = None) -> QualifyResult:
    """Qualifies `bundle` against the stock engine (or against `baseline`, the incumbent's bundle, armed in B)."""
    options = options or QualifyOptions()
    if options.preset not in PRESETS or options.shapes not in SHAPES:
        raise ValueError(f"unknown preset {options.preset!r} or shapes {options.shapes!r}")
    if options.sandboxed:
        ensure_available(server_policy(options.device))  # fail closed before any run, even with a pooled server
    else:
        logging.getLogger("hotfloat.qualify").warning(
            "UNSANDBOXED qualification: engine processes run candidate code with the validator's view")
    launch = Launch(warm=options.warm, sandboxed=options.sandboxed, startup_timeout_s=options.startup_timeout_s,
                    batch_timeout_s=options.batch_timeout_s, threads=options.threads,
                    extra_passes=dict(options.extra_passes))
    engine = options.engine()
    workload = make_workload(options.shapes, PRESETS[options.preset]["vocab_size"], passes=options.passes,
                             warmup_passes=options.warmup_passes, seed=options.seed)
    started, t0 = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    bundles = {"c": _loaded(bundle), **({"b": _loaded(baseline)} if baseline else {})}
    with staged(bundles, sandboxed=options.sandboxed) as paths:
        cand = _Armed(paths["c"], bundles["c"].identity)
        base = _Armed(paths["b"], bundles["b"].identity) if baseline else None
        frames, engine_id, decision = _protocol(engine, workload, options.rule, launch, cand, base, progress)
    evidence = Evidence(bundle_identity=cand.identity, baseline_identity=base.identity if base else None, engine=engine,
                        engine_identity=engine_id or "unknown", workload=workload, rule=options.rule, env=environment(),
                        sandboxed=options.sandboxed, frames=frames, decision=decision, started=started,
                        seconds=time.monotonic() - t0)
    return QualifyResult(status=decision.status, score=decision.score, reason=decision.reason, evidence=evidence)


def _protocol(engine, workload, rule, launch, cand, base, progress) -> tuple[list[RunFrame], str | None, Decision]:
    frames: list[RunFrame] = []
    engine_id = None
    most = 2 * rule.max_pairs + 1
    while True:
        role = "C" if len(frames) % 2 else "B"
        armed = cand if role == "C" else base
        if progress:
            progress(f"run {len(frames) + 1}: {role}", len(frames), most)
        frame, eid = run_engine(len(frames), role, engine, workload, armed.path if armed else None,
                                armed.identity if armed else None, launch)
        frames.append(frame)
        if eid and engine_id and eid != engine_id:
            raise InfrastructureError(f"engine identity changed between runs ({engine_id[:12]} -> {eid[:12]})")
        engine_id = engine_id or eid
        decision = judge(frames, rule)
        if decision is not None:
            if progress:
                progress("done", most, most)
            return frames, engine_id, decision


class _Armed:
    """A staged bundle directory as the engine process sees it, with the identity it must have."""

    def __init__(self, path: str, identity: str):
        self.path, self.identity = path, identity


def _loaded(bundle: Bundle | str | os.PathLike) -> Bundle:
    return bundle if isinstance(bundle, Bundle) else load_bundle(bundle)


def environment() -> dict:
    """The host's environment identity (hotfloat.env), as plain JSON data for the evidence."""
    from ..env import collect

    return collect().model_dump(mode="json")
