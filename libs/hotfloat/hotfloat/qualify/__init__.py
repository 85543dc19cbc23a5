"""Qualification: complete-engine A/B timing of a candidate bundle, its correctness gate, decision and evidence.

    from hotfloat.qualify import QualifyOptions, qualify_bundle
    result = qualify_bundle("examples/silu_torch", QualifyOptions(device="cpu"))   # -> QualifyResult
    result.status, result.score, result.reason, result.evidence                    # PASS/FAIL/NO_DECISION/N/A

    from hotfloat.qualify import load_evidence, recompute
    recompute(load_evidence("evidence.json"))      # -> Decision, from the evidence alone

The candidate's code runs only in forked engine processes (hotfloat.qualify.worker); this process never imports it.

The stages, a module each: `api` (the options; their defaults read from the calibration record on CUDA) ->
`pipeline` (stage the bundles, run the protocol, form the evidence) -> `protocol` (B, C, B' and the twin over rounds,
on `fleet`: the one rounds loop over resident engines, which calibration collection runs too) -> `rule` and `gate`
(speed and correctness, combined by `decision`) -> `records` and `evidence` (what is kept, and recomputed) ->
`calibrate*` (collection through `fleet` on the device; records and statistics anywhere).
"""

from .api import QualifyOptions
from .pipeline import qualify_bundle
from .evidence import Evidence, QualifyResult
from .evidence import load as load_evidence
from .evidence import recompute
from .evidence import save as save_evidence
from .records import Decision, EngineSpec, RuleConfig, RunFrame, Workload

__all__ = [
    "Decision",
    "EngineSpec",
    "Evidence",
    "QualifyOptions",
    "QualifyResult",
    "RuleConfig",
    "RunFrame",
    "Workload",
    "load_evidence",
    "qualify_bundle",
    "recompute",
    "save_evidence",
]
