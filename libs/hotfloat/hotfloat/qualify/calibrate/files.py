"""The calibration's files, and reading them back as untrusted input: what the device collects (`CalibrationRaw`,
hotfloat.qualify.calibrate.collect), what the analysis records (`CalibrationRecord`, hotfloat.qualify.calibrate.analyse)
and the pre-registration that fixes the rule before any collection.
"""

from __future__ import annotations

import math
import os
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ...bundle.bounded import load_record
from ...env import EnvIdentity
from ..isolation.memory import MemoryRecord
from ..records import EngineSpec, IsolationRecord, Record, RuleConfig, Workload

TARGET_FALSE_PASS = 0.01
TARGET_POWER = 0.95
TARGET_MINUTES = 10.0
TARGET_CONTROLS = 5
"""The issue's targets, on independent units: the one-sided 95% bound on false PASS <= 1%, >= 95% of >= 5 real
positive controls at 2% passed, <= 10 minutes per qualification."""

PassSeconds = Annotated[float, Field(ge=1e-6, le=86400, allow_inf_nan=False)]
"""A measured pass lasts between a microsecond and a day; a raw file saying otherwise (NaN and infinities included)
was not measured, and the analysis's logarithms and exponentials would leave the floats on it."""


class RawRound(Record):
    t: float
    """Seconds since the first round started."""
    order: list[str]
    pass_s: dict[str, PassSeconds]
    """Engine name -> seconds of its pass (validator clock), the quantity the rule compares."""
    agree: dict[str, float] = {}
    """Engine name -> fraction of requests whose tokens equal the first stock engine's in this round."""
    host: dict[str, dict[str, float]] = {}
    """Engine name -> what the host did during its pass (hotfloat.engine.hostload): the engine tree's CPU seconds,
    seconds stolen by the hypervisor, the SM clock after the pass. Diagnostics for where slow passes come from."""


class CalibrationRaw(Record):
    """What one device run collected: one boot, one set of engine processes."""

    format: Literal["hotfloat-calibration-raw-v1"] = "hotfloat-calibration-raw-v1"
    started: str
    device: str
    engine: EngineSpec
    engine_identity: str = ""
    engine_info: dict[str, str] = {}
    workload: Workload
    stock: list[str]
    """Names of the stock engines (B1, B2, ...)."""
    handicap: dict[str, Annotated[float, Field(gt=0, lt=0.5)]] = {}
    """Handicapped stock engine (H1, H2, ...) -> the effect its delay was sized for: C stock against B and B' so
    handicapped saves that fraction of their pass (a positive control, added by the validator, not by a bundle)."""
    handicap_us: dict[str, Annotated[float, Field(ge=0, le=1e6)]] = {}
    """Handicapped engine -> microseconds of GPU delay after each of its activation.silu_and_mul calls."""
    candidates: dict[str, str] = {}
    """Candidate engine name (C1, C2, ...) -> identity of the bundle armed in it."""
    boot_s: dict[str, float]
    rounds: list[RawRound] = []
    routed: dict[str, dict[str, int]] = {}
    """Engine name -> seam calls routed to its bundle over its lifetime (reported when it stopped)."""
    kept: list[str] = []
    """Engines whose completions of the first `kept_rounds` rounds are in the outputs file (for evidence)."""
    kept_rounds: int = 0
    failed: dict[str, str] = {}
    """Candidate engines that failed (at boot or in a round) and left the collection, with why."""
    sandboxed: bool
    isolation: IsolationRecord | None = None
    """How idle engines were kept idle around each timed pass, as in a qualification (None: collected before that)."""
    memory: MemoryRecord | None = None
    """The device's memory plan and what each engine held (None: collected before engines had shares)."""
    env: EnvIdentity | None = None
    """hotfloat.env.collect() of the device host."""
    command: str = ""

    @property
    def engines(self) -> list[str]:
        return self.stock + list(self.handicap) + list(self.candidates)

    @model_validator(mode="after")
    def _complete(self):
        """Every engine the file names has a boot time and a pass time in every round, as `collect` writes them (a
        candidate that fails leaves `candidates` in the round it fails), so the analysis can index them all."""
        names = self.engines
        if len(set(names)) != len(names):
            raise ValueError(f"engine names repeat across stock, handicapped and candidates: {names}")
        if self.handicap.keys() != self.handicap_us.keys():
            raise ValueError("handicap and handicap_us name different engines")
        if missing := set(names) - self.boot_s.keys():
            raise ValueError(f"boot_s lacks {sorted(missing)}")
        if unknown := set(self.kept) - set(names):
            raise ValueError(f"kept names engines that are not in the collection: {sorted(unknown)}")
        for i, r in enumerate(self.rounds):
            if missing := set(names) - r.pass_s.keys():
                raise ValueError(f"round {i} has no pass time for {sorted(missing)}")
        return self


class Unit(Record):
    """One qualification formed from a boot's own engines, from its first round until the rule decides."""

    source: int
    """Index into the record's `sources`."""
    kind: Literal["null", "positive"]
    """null: three stock engines as B, C, B'; positive: a stock C against two handicapped engines as B and B'."""
    effect: float = 0.0
    """The handicap B and B' carry (positive controls)."""
    engines: list[str]
    """B, C, B' as named in the raw file."""
    status: str | None
    """The rule's decision; None when the collection ended before the rule decided (not counted)."""
    rounds: int
    measured: float
    """C's gain by the rule's estimator over every round of the collection: for a positive control the realised
    effect of the handicap, for a null triple the offset between its processes."""


class Rates(Record):
    """Decisions of a group of qualifications at one effect."""

    effect: float
    qualifications: int
    passes: int
    fails: int
    mean_rounds: float
    realised_effect: float | None = None
    """Positive controls: the mean measured gain of C (Unit.measured), against the nominal `effect`."""


class ProcessModel(Record):
    """Log pass time = round effect + process offset (s.d. tau, persistent) + per-pass noise (s.d. sigma)."""

    method: str
    processes: int
    passes: int
    sigma: float
    tau: float
    tau_upper_95: float
    sims: int
    false_pass: float
    """The rule's false PASS rate simulated under the fitted model (offsets drawn at tau, per-pass noise resampled
    from the fitted residuals)."""
    false_pass_at_tau_upper: float
    power_at_2pct: float
    """Simulated at tau_upper_95, the conservative side."""


class RobustModel(ProcessModel):
    """The same model fitted with each boot's far passes winsorized (hotfloat.qualify.calibrate.robust), so that one
    pass cannot set sigma and tau; its simulation still resamples the raw residuals, far passes included."""

    cut: float
    """Robust s.d. of its boot's residuals beyond which a pass was pulled in."""
    winsorized: int
    """Passes pulled in, of `passes`."""


class Preregistration(Record):
    """The rule fixed before the data that scores it, and on what it was fixed."""

    format: Literal["hotfloat-calibration-preregistration-v1"] = "hotfloat-calibration-preregistration-v1"
    fixed: str
    """UTC date the rule was committed, before any collection it is scored on."""
    rule: RuleConfig
    selected_on: list[str]
    """File names of the raw collections that informed the choice; units from them are not held out."""
    why: str


class CalibrationRecord(Record):
    """docs/calibration-h200.json: the rule's measured behaviour on one machine and engine."""

    format: Literal["hotfloat-calibration-v2"] = "hotfloat-calibration-v2"
    device: str
    engine: dict[str, str]
    rounds: int
    """Raw rounds analysed (every engine served one pass in each)."""
    independent_draws: int
    """Null qualifications on disjoint engine triples (within a boot) or separate boots: no process shared."""
    false_passes_independent: int
    false_pass_upper_95: float
    """One-sided 95% Clopper-Pearson upper bound of exactly `false_passes_independent` in `independent_draws`."""
    held_out_draws: int
    held_out_false_passes: int
    held_out_upper_95: float
    """The same over units from collections the pre-registration did not look at."""
    pooled_draws: int
    pooled_false_passes: int
    """Secondary: every role permutation over back-to-back blocks of rounds; they share processes and rounds, so
    they are correlated and bound nothing."""
    positive_control: list[Rates]
    """Per handicap: real qualifications of a stock C against handicapped B and B'."""
    injected: list[Rates]
    """Secondary: the null units with C's pass times scaled by (1 - effect), a model of a faster kernel."""
    model: ProcessModel
    """The moment fit: every pass weighs its square, so one far pass can set it (docs/qualification.md, influence)."""
    robust_model: RobustModel | None = None
    """The robust fit, the one the docs' model-based statements use (None: analysed before it existed)."""
    units: list[Unit]
    minutes_per_qualification: float
    """The slowest boot of three engines plus the mean rounds of a 2%-better C (positive control, else injected)."""
    selection: Literal["pre-registered"] = "pre-registered"
    preregistration: Preregistration
    rule: RuleConfig
    noise: dict[str, float]
    """Per-pass relative s.d. per engine, the s.d. and median of ln(B'/B) per stock pair, the round pace."""
    measured_candidate: dict[str, float] = {}
    """Each real candidate booted alongside: its effect against B1 and B2 and its token agreement with B1."""
    meets_targets: bool
    shortfall: list[str]
    """Each target not shown, and why."""
    path_to_300: dict[str, float]
    """The independent units a 1% bound needs at k = 0, the units a wave of six engines on one GPU yields, the
    measured minutes of such a wave and the device-hours the rest takes."""
    sources: list[str]
    collected_by: list[str] = []
    """The device command that produced each raw file."""
    command: str
    """The analysis command that produced this record."""
    analysed: str
    source: str | None = None
    """The source digest of the tree that analysed the raw files (hotfloat.env.source; each raw file's `env.source`
    names the tree that collected it); None in records analysed before records carried it."""

    @model_validator(mode="after")
    def _bound_is_of_the_counts(self):
        """The headline bound is recomputable from the two counts beside it, and the rule is the pre-registered one."""
        if (
            abs(self.false_pass_upper_95 - clopper_pearson_upper(self.false_passes_independent, self.independent_draws))
            > 1e-6
        ):
            raise ValueError("false_pass_upper_95 is not the Clopper-Pearson bound of the independent counts")
        if self.rule != self.preregistration.rule:
            raise ValueError("the record's rule is not the pre-registered one")
        return self


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided upper confidence bound of a binomial rate (k successes in n)."""
    if n == 0 or k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        cdf = sum(math.comb(n, i) * mid**i * (1 - mid) ** (n - i) for i in range(k + 1))
        lo, hi = (mid, hi) if cdf > 1 - level else (lo, mid)
    return hi


RECORD_BYTES = 8 << 20
"""A calibration record is tens of KiB; a larger file is refused before it is parsed."""
RAW_BYTES = 64 << 20
"""A raw collection is well under a MiB per hundred rounds; a larger file is refused before it is parsed."""


def load_calibration(path: str | os.PathLike) -> CalibrationRecord:
    return load_record(path, CalibrationRecord, max_bytes=RECORD_BYTES, what="a calibration record")


def load_raw(path: str | os.PathLike) -> CalibrationRaw:
    """A collection's raw JSON, read back as untrusted input (`analyse` and `evidence` run on files from elsewhere)."""
    return load_record(path, CalibrationRaw, max_bytes=RAW_BYTES, what="a raw calibration collection")


def load_preregistration(path: str | os.PathLike) -> Preregistration:
    return load_record(path, Preregistration, max_bytes=RECORD_BYTES, what="a pre-registered rule")
