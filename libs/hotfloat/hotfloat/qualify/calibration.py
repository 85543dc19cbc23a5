"""The calibration a verdict was judged under: which record's measured error rates stand behind it, so every place a
verdict appears (the CLI, the evidence, the gRPC reply, the ledger, settlement) can say what its PASS is worth.

A calibration record (hotfloat.qualify.calibrate.files.CalibrationRecord) measures one timing rule on one GPU model
and one engine configuration (its `engine` block). A verdict names the record only when all of that is the verdict's
own: the timing rule, and every setting of the engine block as the engine reported it. Anything else names no record
and says why: a bound measured on another configuration says nothing about this one. The record is read once and its
bytes digested (`CalibrationFile`), so `check` can tell a summary that is not the record's own.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..bundle.bounded import parse_record, read_file
from ..errors import InputError
from ..record import Record
from .calibrate.files import RECORD_BYTES, CalibrationRecord, Preregistration, clopper_pearson_upper
from .records import RuleConfig

CONTROL_EFFECT = 0.02
"""The effect the power target is set at (files.TARGET_POWER of at least TARGET_CONTROLS real controls)."""
DERIVED = frozenset({"kv_pool_tokens"})
"""Engine facts a record may lack: the KV pool SGLang built follows from `max_total_tokens`, which the record pins
(an engine whose pool falls short refuses to serve), and records made before the fact was reported omit it."""
TIMING = frozenset(RuleConfig.model_fields) - {"gate_slack", "audit_slack", "logprob_tol"}
"""The rule fields a timing calibration measures; the correctness slacks and the gate's floor are chosen elsewhere."""


class CalibrationFile(Record):
    """A calibration record or pre-registration as read once from its file: the timing rule it sets, and for a record
    its content and the digest of its bytes."""

    name: str
    """The file's name (e.g. `calibration-h100.json`), as verdicts name it."""
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """SHA-256 of the file's bytes."""
    rule: RuleConfig
    record: CalibrationRecord | None = None
    """None: a pre-registration, a rule fixed before any unit was collected."""


def read_calibration(path: str | os.PathLike) -> CalibrationFile:
    """A calibration record (or a pre-registration) read once, parsed from exactly the bytes digested; anything else
    is one InputError line."""
    try:
        data = read_file(path, RECORD_BYTES)
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: not a calibration record: {getattr(e, 'strerror', None) or e}") from None
    named = dict(name=Path(path).name, sha256=hashlib.sha256(data).hexdigest())
    try:
        record = parse_record(
            data, CalibrationRecord, max_bytes=RECORD_BYTES, what="a calibration record", name=str(path)
        )
    except InputError as e:
        try:
            prereg = parse_record(data, Preregistration, max_bytes=RECORD_BYTES, what="a pre-registration", name="")
        except InputError:
            raise e from None
        return CalibrationFile(**named, rule=prereg.rule)
    return CalibrationFile(**named, rule=record.rule, record=record)


class Calibrated(Record):
    """The record a verdict was judged under, in brief: what its bound and its power say a PASS is worth."""

    kind: Literal["record"] = "record"
    record: str
    """The record's file name."""
    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    """Digest of the record's bytes: `check` (and `hotfloat qualify recompute`) holds this summary to the record."""
    device: str
    """The GPU model it was measured on (NVML's name)."""
    units: Annotated[int, Field(ge=0)]
    """Independent null qualifications (no engine process shared between two)."""
    false_passes: Annotated[int, Field(ge=0)]
    false_pass_upper_95: Annotated[float, Field(ge=0, le=1)]
    """One-sided 95% Clopper-Pearson bound of `false_passes` in `units`: the false-PASS rate a PASS under this
    record is known to stay below."""
    controls: Annotated[int, Field(ge=0)]
    """Real positive controls at CONTROL_EFFECT (a stock C against handicapped B and B')."""
    control_passes: Annotated[int, Field(ge=0)]
    injected: Annotated[int, Field(ge=0)] = 0
    """Secondary power: the null units with CONTROL_EFFECT injected into C's pass times..."""
    injected_passes: Annotated[int, Field(ge=0)] = 0
    """...and how many of them passed."""
    meets_targets: bool
    shortfall: list[str] = []
    """Each target the record misses, as the record says it."""

    @model_validator(mode="after")
    def _consistent(self):
        if abs(self.false_pass_upper_95 - clopper_pearson_upper(self.false_passes, self.units)) > 1e-6:
            raise ValueError("false_pass_upper_95 is not the Clopper-Pearson bound of the counts beside it")
        if self.meets_targets == bool(self.shortfall):
            raise ValueError("a record meets its targets exactly when it names no shortfall")
        return self

    @property
    def bound(self) -> float:
        return self.false_pass_upper_95

    def line(self) -> str:
        """The record in one line, as every verdict names it."""
        power = f"{self.control_passes} of {self.controls} positive controls at {CONTROL_EFFECT:.0%} passed"
        if self.injected:
            power += f" ({self.injected_passes} of {self.injected} injected)"
        met = "meets its targets" if self.meets_targets else "MISSES ITS TARGETS"
        return (
            f"{self.record} (sha256 {self.sha256[:12]}, {self.device}): {self.units} independent null units, "
            f"{self.false_passes} false PASS, false PASS <= {self.bound:.1%} (95%); {power}; {met}"
        )


class Uncalibrated(Record):
    """No calibration record stands behind the verdict, and why."""

    kind: Literal["none"] = "none"
    why: str

    @property
    def bound(self) -> float:
        return 1.0

    @property
    def meets_targets(self) -> bool:
        return False

    def line(self) -> str:
        return f"none ({self.why}): no measured false-PASS bound"


Calibration = Annotated[Calibrated | Uncalibrated, Field(discriminator="kind")]


def caveat(status: str, calibration: Calibrated | Uncalibrated) -> str | None:
    """The one line a verdict carries when its calibration does not back it in full: a PASS under a record that
    misses its targets (or under none) is provisional; other verdicts under such a record say it misses them."""
    if calibration.meets_targets:
        return None
    if isinstance(calibration, Uncalibrated):
        return f"provisional PASS: no calibration record backs it ({calibration.why})" if status == "PASS" else None
    short = "; ".join(calibration.shortfall)
    if status == "PASS":
        return f"provisional PASS, not a full one: {calibration.record} misses its targets ({short})"
    return f"judged under {calibration.record}, which misses its targets ({short})"


def summary(file: CalibrationFile) -> Calibrated:
    """A record's figures as a verdict carries them."""
    r = file.record
    if r is None:
        raise ValueError(f"{file.name} is a pre-registration, not a record")
    control = next((c for c in r.positive_control if c.effect == CONTROL_EFFECT), None)
    injected = next((c for c in r.injected if c.effect == CONTROL_EFFECT), None)
    return Calibrated(
        record=file.name,
        sha256=file.sha256,
        device=r.device,
        units=r.independent_draws,
        false_passes=r.false_passes_independent,
        false_pass_upper_95=r.false_pass_upper_95,
        controls=control.qualifications if control else 0,
        control_passes=control.passes if control else 0,
        injected=injected.qualifications if injected else 0,
        injected_passes=injected.passes if injected else 0,
        meets_targets=r.meets_targets,
        shortfall=r.shortfall,
    )


def describe(
    file: CalibrationFile | None, rule: RuleConfig, engine_info: dict[str, str], device: str
) -> Calibrated | Uncalibrated:
    """The calibration a verdict under `rule` on an engine that reported `engine_info` was judged under: `file`'s
    record when the rule and the engine configuration are the record's own, else none, with why."""
    if file is None:
        why = "the CPU rule" if device == "cpu" else "a rule given by hand"
        return Uncalibrated(why=f"{why}, never calibrated")
    if file.record is None:
        return Uncalibrated(why=f"{file.name} is a pre-registration: a rule fixed before any unit was collected")
    name = file.name
    if differs := _rule_differs(file.rule, rule, name) or _engine_differs(file.record.engine, engine_info, name):
        return Uncalibrated(why=differs)
    return summary(file)


def _rule_differs(recorded: RuleConfig, rule: RuleConfig, name: str) -> str | None:
    off = [
        f"{k} {getattr(rule, k)} (record {getattr(recorded, k)})"
        for k in sorted(TIMING)
        if getattr(rule, k) != getattr(recorded, k)
    ]
    return f"the timing rule differs from {name}'s: {', '.join(off)}" if off else None


def _engine_differs(recorded: dict[str, str], info: dict[str, str], name: str) -> str | None:
    if not info:
        return f"the engine reported no configuration to hold against {name}'s"
    off = [f"{k} {info.get(k, '(unset)')} (record {v})" for k, v in sorted(recorded.items()) if info.get(k) != v]
    off += [f"{k} {v} (record: unset)" for k, v in sorted(info.items()) if k not in recorded and k not in DERIVED]
    more = ", ..." if len(off) > 4 else ""
    return f"the engine configuration differs from {name}'s: {', '.join(off[:4])}{more}" if off else None


def check(
    claim: Calibrated | Uncalibrated,
    rule: RuleConfig,
    engine_info: dict[str, str],
    device: str,
    at_hand: Iterable[CalibrationFile],
) -> bool:
    """Holds a verdict's claimed record to the record itself: True when checked, False when no record at hand has its
    digest; InputError when the claim is not what that record says for this rule and engine. A claim of none names
    nothing to hold (it only ever understates)."""
    if isinstance(claim, Uncalibrated):
        return True
    file = next((f for f in at_hand if f.sha256 == claim.sha256), None)
    if file is None:
        return False
    again = describe(file, rule, engine_info, device)
    if isinstance(again, Calibrated):
        again = again.model_copy(update={"record": claim.record})  # the same bytes under another file name
    if again != claim:
        what = again.line() if isinstance(again, Calibrated) else f"none ({again.why})"
        raise InputError(f"the evidence's calibration is not what {file.name} says for its rule and engine: {what}")
    return True
