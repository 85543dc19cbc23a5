"""`qualify_bundle`: the complete-engine A/B of one candidate, as the CLI and the Qualification service call it.

The stages in order: the options (hotfloat.qualify.options) fix the engine and the workload; the bundles are staged;
the resident-engine protocol (hotfloat.qualify.protocol: B, C, B' and the gate's twin T, each in its own sandbox,
timed one at a time with the others locked and stopped) serves rounds until the rule and the gate decide; its frames
and decision become recomputable evidence. The candidate bundle is armed only in C; without a sandbox,
qualification refuses to run unless the caller opts out with `sandboxed=False`, and on CUDA without GPU isolation
unless `gpu_isolation=False`; the evidence records both.
"""

from __future__ import annotations

import datetime
import logging
import os
import time

from ..bundle import Bundle, load_bundle
from ..sandbox import ensure_available
from ..errors import InputError
from .calibration import describe
from .options import NO_RECORD, QualifyOptions, for_slots
from .evidence import Evidence, QualifyResult
from .host import engine_policy, staged
from ..engine.presets import PRESETS
from .protocol import Progress, Protocol
from .isolation.resident import harden_self
from .workload import make_workload

log = logging.getLogger("hotfloat.qualify")


def qualify_bundle(
    bundle: Bundle | str | os.PathLike,
    options: QualifyOptions | None = None,
    *,
    baseline: Bundle | str | os.PathLike | None = None,
    progress: Progress | None = None,
) -> QualifyResult:
    """Qualifies `bundle` against the stock engine (or against `baseline`, the incumbent's bundle, armed in B and B')."""
    from ..env import collect as environment

    options = options or QualifyOptions()
    if options.uncalibrated:
        raise InputError(NO_RECORD.format(gpu=options.uncalibrated))
    bundles = {"c": _loaded(bundle), **({"b": _loaded(baseline)} if baseline else {})}
    options = for_slots(options, {op.entry.slot for b in bundles.values() for op in b.ops})
    engine = options.engine()
    if options.sandboxed:
        ensure_available(engine_policy(options.device, engine.kind))  # fail closed before any engine starts
    else:
        log.warning("UNSANDBOXED qualification: engine processes run candidate code with the validator's view")
    if options.device == "cuda" and not options.gpu_isolation:
        log.warning("UNISOLATED qualification: an idle engine's GPU work is not locked out of the timed passes")
    harden_self()
    workload = make_workload(
        options.shapes,
        PRESETS[options.preset]["vocab_size"],
        passes=options.rule.max_rounds,
        warmup_passes=options.warmup_passes,
        seed=options.seed,
    )
    started, t0 = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), time.monotonic()
    with staged(bundles, sandboxed=options.sandboxed) as paths:
        stock = {"bundle": paths.get("b"), "identity": bundles["b"].identity if baseline else None}
        arms = [stock, {"bundle": paths["c"], "identity": bundles["c"].identity}, stock]
        if options.twin:
            arms.append({**stock, "twin_of": paths["c"], "twin_identity": bundles["c"].identity})
        declared = {op.entry.slot for op in bundles["c"].ops}
        out = Protocol(engine, workload, options, arms, progress, declared).run()
    evidence = Evidence(
        bundle_identity=bundles["c"].identity,
        baseline_identity=bundles["b"].identity if baseline else None,
        engine=engine,
        engine_identity=out.identity or "unknown",
        engine_info=out.info,
        workload=workload,
        order=out.order,
        rule=options.rule,
        env=environment(),
        sandboxed=options.sandboxed,
        frames=out.frames,
        twin=out.twin,
        isolation=out.isolation,
        audit=out.audit,
        memory=out.memory,
        decision=out.decision,
        calibration=describe(options.calibration, options.rule, out.info, options.device),
        started=started,
        seconds=time.monotonic() - t0,
    )
    d = out.decision
    return QualifyResult(status=d.status, score=d.score, reason=d.reason, evidence=evidence)


def _loaded(bundle: Bundle | str | os.PathLike) -> Bundle:
    return bundle if isinstance(bundle, Bundle) else load_bundle(bundle)
