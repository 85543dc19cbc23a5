"""Qualification: complete-engine A/B timing of a candidate bundle, its correctness gate, decision and evidence.

    from hotfloat.qualify import QualifyOptions, qualify_bundle
    result = qualify_bundle("examples/silu_torch", QualifyOptions(device="cpu"))   # -> QualifyResult
    result.status, result.score, result.reason, result.evidence                    # PASS/FAIL/NO_DECISION/N/A

    from hotfloat.qualify import load_evidence, recompute
    recompute(load_evidence("evidence.json"))      # -> Decision, from the evidence alone

The candidate's code runs only in the engine processes (hotfloat.engine, each started by `host` in a sandbox of its
own); this process never imports it, and no module of this package is loaded in an engine process
(tests/test_architecture.py runs the worker to check).

The decision core, a module each: `options` (the options; their defaults read from the calibration record on CUDA)
-> `pipeline` (stage the bundles, run the protocol, form the evidence) -> `protocol` (B, C, B' and the twin over
rounds, on `fleet`: the one rounds loop over resident engines, which calibration collection runs too) -> `rule` and
`gate` (speed and correctness, combined by `decision`) -> `records` and `evidence` (what is kept, and recomputed).
Beside it, a package each: `isolation` (the resident engines seen from the validator, and how every idle one is
locked and stopped while another is timed) and `calibrate` (collection through `fleet` on the device; records and
statistics anywhere); the in-engine audit's validator side is `audit` (with `audit_records`, and `audit_v3` for the
evidence judged before it).
"""

import importlib

_FACE = {
    "QualifyOptions": ("options", "QualifyOptions"),
    "qualify_bundle": ("pipeline", "qualify_bundle"),
    "Evidence": ("evidence", "Evidence"),
    "QualifyResult": ("evidence", "QualifyResult"),
    "load_evidence": ("evidence", "load"),
    "recompute": ("evidence", "recompute"),
    "save_evidence": ("evidence", "save"),
    "Decision": ("records", "Decision"),
    "EngineSpec": ("records", "EngineSpec"),
    "RuleConfig": ("records", "RuleConfig"),
    "RunFrame": ("records", "RunFrame"),
    "Workload": ("records", "Workload"),
}
"""The package's face, imported on first use (PEP 562): importing a module of the package loads that module alone."""

__all__ = sorted(_FACE)


def __getattr__(name: str):
    if name not in _FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attr = _FACE[name]
    value = getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    globals()[name] = value
    return value
