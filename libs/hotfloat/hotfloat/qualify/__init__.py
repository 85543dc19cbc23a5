"""Qualification: complete-engine A/B timing of a candidate bundle, its correctness gate, decision and evidence.

    from hotfloat.qualify import QualifyOptions, qualify_bundle
    result = qualify_bundle("examples/silu_torch", QualifyOptions(device="cpu"))   # -> QualifyResult
    result.status, result.score, result.reason, result.evidence                    # PASS/FAIL/NO_DECISION/N/A

    from hotfloat.qualify import load_evidence, recompute
    recompute(load_evidence("evidence.json"))      # -> Decision, from the evidence alone

The candidate's code runs only in the engine processes (`engines`, each started by `host` in a sandbox of its own);
this process never imports it.

The decision core, a module each: `options` (the options; their defaults read from the calibration record on CUDA)
-> `pipeline` (stage the bundles, run the protocol, form the evidence) -> `protocol` (B, C, B' and the twin over
rounds, on `fleet`: the one rounds loop over resident engines, which calibration collection runs too) -> `rule` and
`gate` (speed and correctness, combined by `decision`) -> `records` and `evidence` (what is kept, and recomputed).
Beside it, a package each: `engines` (what runs in an engine process, beside the candidate's code; it never imports
the decision side), `isolation` (the resident engines seen from the validator, and how every idle one is locked and
stopped while another is timed) and `calibrate` (collection through `fleet` on the device; records and statistics
anywhere).
"""

from .options import QualifyOptions
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
