"""What a validator chooses for a qualification (`QualifyOptions`) and the defaults behind it, from one source.

A device's timing rule is `default_rule(device, gpu)`: on CUDA the rule the packaged calibration records of that GPU
model chose (read, never copied; a model without a record is refused unless a rule is configured), on a CPU box the
switched-off bounds of `CPU_RULE`. A GPU model may have a record per attention backend (a record belongs to one
engine configuration); its SGLang engines run `default_attention(gpu)`: production's backend where a record was
made on it, else the backend its record was made on. `for_device` fills in the device's defaults, `rule_given`
lays a configured rule (`--rule-from`) over them. The run itself is hotfloat.qualify.pipeline.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ..devices import gpu_name
from ..errors import InputError
from .calibrate.files import load_calibration
from .calibration import TIMING, CalibrationFile, read_calibration
from ..engine.presets import PRESETS
from .records import (
    ATTENTION_BACKENDS,
    BACKEND_SEAMS,
    AttentionBackend,
    Decode,
    EngineKind,
    EngineSpec,
    Record,
    Role,
    RuleConfig,
)
from .workload import SHAPES


GATE_SLACK = 1.5
"""RuleConfig.gate_slack of every new qualification, chosen from the H200 ladder (docs/qualification.md, "Choosing
the slacks"): honest kernels left the path at most 1.00x as often as their twin on every measure, the 0.5%-off
fused kernel 1.66x, silu 1% off 1.77x, a row-wrong silu 1.68x; 1.5 keeps an honest kernel 1.5x from the bar."""
AUDIT_SLACK = 1.6
"""RuleConfig.audit_slack of every new qualification: an accurate kernel is within an ulp of the correctly rounded
value; with one extra rounding (the unfused residual) it sits at most 1.53x stock's median audited error, kernels
0.5% off at 1.7x and more, bf16 intermediates at 1.9-2.4x (H200 ladder and tools/audit_slack.py;
docs/qualification.md, "Choosing the slacks")."""

CPU_RULE = dict(look_rounds=4, max_looks=2, drift_bound=5.0, carry_bound=5.0, noise_floor=0.01, process_floor=0.01)
"""The rule on a shared CPU box (CI): its load swings, so the drift and carry-over bounds are switched off."""
CUDA_RECORDS = tuple(sorted(Path(__file__).parent.glob("calibration-*.json")))
"""The calibration records shipped with the package, one per GPU model and attention backend
(docs/calibration-<gpu>[-<backend>].json link here): a qualification's rule on CUDA is the one its GPU's records chose
(pre-registered once per GPU model in docs/calibration-<gpu>.preregistered.json), read, never copied."""
PRODUCTION_ATTENTION: AttentionBackend = "flashinfer"
"""The production attention backend a device call can carry: the pinned SGLang picks fa3 on Hopper for MHA models
(flashinfer elsewhere), and FlashInfer's sm_90 prefill is its own FA3-derived kernel (docs/qualification.md)."""
NO_RECORD = (
    "no calibration record for {gpu}: make one on this GPU with `hotfloat qualify calibrate collect --device cuda "
    "--out raw.json` then `hotfloat qualify calibrate analyse raw.json --preregistered PREREG --out record.json`, and "
    "qualify with `--rule-from record.json`"
)


class QualifyOptions(Record):
    """What the validator chooses for a qualification; the candidate chooses none of it. Defaults follow the device:
    `for_device` fills them in (the CLI and the services call it), so a caller names only what it changes; the
    class's own defaults are the CPU device's (a test holds `QualifyOptions() == for_device("cpu")`)."""

    engine_kind: EngineKind = "transformers"
    """"sglang" (CUDA) or the transformers stand-in."""
    preset: str = "tiny"
    """Engine model preset (hotfloat.engine.presets.PRESETS)."""
    model_path: str | None = None
    """SGLang only: a checkpoint directory instead of a generated model."""
    device: Literal["cpu", "cuda"] = "cpu"
    dtype: Literal["fp32", "bf16", "fp16"] = "fp32"
    decode: Decode | None = None
    """Decode mode of B and C alike (EngineSpec.decode); None: CUDA graphs on CUDA, eager on CPU."""
    attention: AttentionBackend = "triton"
    """SGLang's attention backend in every engine (EngineSpec.attention); `for_device` defaults an SGLang engine on
    CUDA to `default_attention(gpu)`."""
    shapes: str = "tiny"
    """Workload request mix (hotfloat.qualify.workload.SHAPES)."""
    warmup_passes: Annotated[int, Field(ge=0, le=16)] = 1
    seed: int | None = None
    """Workload prompt seed; None draws a secret one."""
    rule: RuleConfig = RuleConfig(**CPU_RULE, gate_slack=GATE_SLACK, audit_slack=AUDIT_SLACK, logprob_tol=1e-3)
    sandboxed: bool = True
    """Engine processes run in the candidate sandbox and qualification fails closed without one; False (logged
    as a warning, recorded in the evidence) runs them with the validator's files, environment and network."""
    startup_timeout_s: Annotated[float, Field(gt=0)] = 900.0
    """Boot, arm, warm-up and graph capture of all three engines must finish within this."""
    batch_timeout_s: Annotated[float, Field(gt=0)] = 300.0
    """The longest any engine may take to answer before any baseline pass was measured (and the cap after)."""
    stall_factor: Annotated[float, Field(ge=1.5, le=100)] = 4.0
    """Once a baseline pass was measured, an engine's pass must end within this many times the slowest one..."""
    stall_floor_s: Annotated[float, Field(gt=0)] = 60.0
    """...and never sooner than this (a shared CPU box swings more than a GPU: `for_device("cuda")` sets 10)."""
    audit_keep: Annotated[int, Field(ge=0, le=64)] = 4
    """Entries B, C and B' alike keep per slot stratum and round for the validator to recompute (0: no audit);
    every call of an audited slot runs the audit's taps, so its cost is the same in every engine."""
    gpu_isolation: bool = True
    """On CUDA, idle engines are locked through the driver's checkpoint API and the GPU is probed quiet around every
    pass (hotfloat.qualify.isolation); a host without the API refuses to qualify unless this is False (recorded)."""
    threads: Annotated[int, Field(ge=1, le=256)] = 1
    """CPU threads per transformers engine on CPU."""
    mem_fraction: Annotated[float, Field(gt=0, lt=1)] = 0.95
    """SGLang's `mem_fraction_static`, which here only gates its memory profiling: SGLang sizes the KV pool as the
    free memory after its model load minus (1 - fraction) of the free memory before it, and engines booting together
    load in between, so anything lower fails the later engines. What an engine really holds is its weights plus the
    KV pool capped at the workload's need (`max_total_tokens`): about 22 GB for llama-8b, so six fit on an H200."""
    twin: bool = True
    """Boot the gate's twin, whose divergence from B sets how far C may stray; False holds C to `logprob_tol`
    alone (bit-exact kernels only, on a model that amplifies rounding)."""
    calibration: CalibrationFile | None = None
    """The calibration record (or pre-registration) the timing rule came from: the GPU's packaged record on CUDA, or
    `--rule-from`'s. The verdict names it when the rule and the engine configuration are its own
    (hotfloat.qualify.calibration); None: the CPU rule, or a rule given by hand."""
    attention_by_default: bool = False
    """`attention` is the GPU's default, not the validator's choice: `for_slots` may move a bundle's qualification to
    a backend that has seams for its slots."""
    uncalibrated: str | None = None
    """The GPU model when it has no calibration record and no rule was configured: `qualify_bundle` refuses such
    options in one line naming the commands that make a record (calibration collection, which needs no rule, runs)."""
    extra_passes: dict[Role, Annotated[int, Field(ge=0, le=1024)]] = {}
    """Calibration only (transformers engine): role -> extra stock activation passes per MLP call, a known speed
    difference injected by the validator (e.g. a slower B to exercise the PASS path where nothing is faster)."""

    @model_validator(mode="after")
    def _engine_is_valid(self):
        self.engine()  # e.g. graph decode on CPU is refused here, before any engine process starts
        if self.preset not in PRESETS or self.shapes not in SHAPES:
            raise ValueError(f"unknown preset {self.preset!r} or shapes {self.shapes!r}")
        return self

    def engine(self) -> EngineSpec:
        """The engine B and C both run."""
        return EngineSpec(
            kind=self.engine_kind,
            preset=self.preset,
            model_path=self.model_path,
            dtype=self.dtype,
            device=self.device,
            decode=self.decode,
            attention=self.attention,
        )

    @classmethod
    def for_device(
        cls, device: str, engine_kind: str | None = None, *, gpu: str | None = None, **given
    ) -> QualifyOptions:
        """Options with the device's defaults for whatever is not given: CPU runs the tiny fp32 stand-in; CUDA runs
        SGLang on the Llama-3-8B shape in bf16 with the decode-heavy `sglang` mix and the rule calibrated for it.
        Why 8B: on the H200 a Qwen2-0.5B decode step is bound by the scheduler's Python (GPU 42-83% busy, passes
        5-15% apart), so a faster kernel cannot show and the noise is the host CPU's; an 8B step keeps the GPU 100%
        busy and passes repeat within 0.1-0.7% (docs/qualification.md, the engine-noise table). `gpu` names the
        device model whose calibration record gives the rule (default: the GPU here, as NVML names it); a model
        without a record is refused unless `rule` configures one."""
        given = {k: v for k, v in given.items() if v is not None}
        kind = engine_kind or ("sglang" if device == "cuda" else "transformers")
        cpu = device == "cpu"
        dtype = given.pop("dtype", "fp32" if cpu else "bf16")
        tol = given.pop("logprob_tol", 1e-3 if dtype == "fp32" else 0.1)
        if device == "cuda" and gpu is None:
            gpu = gpu_name()
        unrecorded = device == "cuda" and gpu not in recorded_gpus()
        if unrecorded and not TIMING <= set(given.get("rule", {})):
            given["uncalibrated"] = gpu or "this host (no GPU found)"
        if device == "cuda" and kind == "sglang" and "attention" not in given:
            given.update(attention=default_attention(gpu), attention_by_default=True)
        if device == "cuda" and not unrecorded:
            given.setdefault("calibration", packaged(gpu, given.get("attention", "triton")))
        rule = {
            **(RuleConfig() if unrecorded else default_rule(device, gpu)).model_dump(),
            "gate_slack": GATE_SLACK,
            "audit_slack": AUDIT_SLACK,
            **given.pop("rule", {}),
            "logprob_tol": tol,
        }
        shapes = given.pop("shapes", "tiny" if cpu else ("sglang" if kind == "sglang" else "gpu"))
        given.setdefault("stall_floor_s", 60.0 if cpu else 10.0)
        return cls(
            device=device,
            engine_kind=kind,
            dtype=dtype,
            shapes=shapes,
            preset=given.pop("preset", "tiny" if cpu else "llama-8b"),
            rule=RuleConfig(**rule),
            **given,
        )


CORRECTNESS = ("gate_slack", "audit_slack")
"""Rule fields chosen from the correctness ladder, not by a timing calibration: a configured rule never sets them.
A configured rule that sets every TIMING field lets a GPU without a packaged record qualify."""


def rule_given(rule: RuleConfig) -> dict:
    """A configured rule (a calibration record's, `--rule-from`) as `for_device` takes it: only the timing fields it
    sets, over the device's defaults. A record naming a few parameters must not reset the rest (CPU's switched-off
    carry-over bound), and a record written before the audit existed (`audit_slack` 0) must not switch it off."""
    fields = rule.model_dump(include=rule.model_fields_set - set(CORRECTNESS))
    tol = fields.pop("logprob_tol", None)
    return {"rule": fields, **({"logprob_tol": tol} if tol is not None else {})}


def rule_from(file: CalibrationFile) -> dict:
    """A calibration record's (or pre-registration's) rule as `for_device` takes it, with the record itself, so the
    verdict can name it."""
    return {**rule_given(file.rule), "calibration": file}


@functools.cache
def recorded_gpus() -> dict[str, dict[str, Path]]:
    """GPU model -> attention backend -> its packaged calibration record (each read and validated once per process);
    two records of one GPU model must share its pre-registered rule."""
    out: dict[str, dict[str, Path]] = {}
    rules: dict[str, RuleConfig] = {}
    for p in CUDA_RECORDS:
        r = load_calibration(p)
        if rules.setdefault(r.device, r.rule) != r.rule:
            raise InputError(f"{p.name}: a timing rule other than the other {r.device} records'")
        out.setdefault(r.device, {})[r.engine.get("attention_backend", "triton")] = p
    return out


def default_attention(gpu: str | None) -> AttentionBackend:
    """The attention backend a GPU model's SGLang engines run unless told otherwise: production's where a packaged
    record was made on it (so the verdict names that record), else the backend of the model's record (its verdicts
    stay calibrated until a record on production's backend lands), production's for a model with none."""
    made = recorded_gpus().get(gpu or "", {})
    return PRODUCTION_ATTENTION if PRODUCTION_ATTENTION in made or not made else min(made)


@functools.cache
def packaged(gpu: str, attention: str = PRODUCTION_ATTENTION) -> CalibrationFile:
    """The calibration record the package ships for `gpu` and `attention`, read once per process; where the GPU
    model has none on that backend, its record of another (whose rule is the model's, and whose engine block makes
    the verdict say that it names no record: hotfloat.qualify.calibration.describe)."""
    made = recorded_gpus().get(gpu, {})
    if not made:
        raise InputError(NO_RECORD.format(gpu=gpu or "this host (no GPU found)"))
    return read_calibration(made.get(attention) or made[min(made)])


def for_slots(options: QualifyOptions, slots: set[str]) -> QualifyOptions:
    """The options a bundle declaring `slots` qualifies under: its SGLang engines must run a backend with a seam for
    each slot, or the engine never calls the bundle. A default backend with none of the bundle's backend-bound slots
    gives way to the GPU's recorded backend that has them all (its packaged record with it, where the rule came from
    the package). Anything else is refused in one line: a backend the validator chose, and a bundle that mixes a slot
    the default backend hooks with one it does not, which would time the first against a backend production does not
    run (a prefill kernel beside a token decode kernel, to be judged against triton's prefill)."""
    if options.engine_kind != "sglang":
        return options
    need = [(s, BACKEND_SEAMS[s]) for s in sorted(slots) if s in BACKEND_SEAMS]
    able = [b for b in ATTENTION_BACKENDS if all(b in on for _, on in need)]
    if options.attention in able:
        return options
    slot, on = next((s, on) for s, on in need if options.attention not in on)
    hooked = [s for s, on in need if options.attention in on]
    if not options.attention_by_default or not able or hooked:
        why = (
            f"qualify it with --attention {on[0]}"
            if not options.attention_by_default
            else f"no backend seams all of {sorted(slots)}"
            if not able
            else f"{', '.join(hooked)} would leave that backend with it: submit them in separate bundles"
        )
        raise InputError(
            f"{slot} has no seam on SGLang's {options.attention} attention backend (seams on: {', '.join(on)}): {why}"
        )
    gpu = options.calibration.record.device if options.calibration and options.calibration.record else None
    made = recorded_gpus().get(gpu or "", {})
    to = next((b for b in able if b in made), able[0])
    ours = made and options.calibration.sha256 == packaged(gpu, options.attention).sha256
    return options.model_copy(update={"attention": to, **({"calibration": packaged(gpu, to)} if ours else {})})


def default_rule(device: str, gpu: str | None = None) -> RuleConfig:
    """The timing rule a device's qualifications use unless told otherwise: on CUDA, the records of `gpu`."""
    return RuleConfig(**CPU_RULE) if device != "cuda" else packaged(gpu).rule
