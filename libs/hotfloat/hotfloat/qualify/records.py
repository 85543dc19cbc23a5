"""Qualification records: the workload, the rule's parameters, every raw timing frame and the decision.

They are the evidence format: a decision must be recomputable from these records alone, so every field the rule
reads is here, and nothing outside them (no clock, no randomness without its seed) enters the decision.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from ..record import Record
from ..verdict import Status

Role = Literal["B", "C", "T"]
FaultKind = Literal["raised", "protocol", "died", "stalled", "identity", "isolation", "memory", "host"]
"""Why an engine failed: it reported an exception, sent something that is not the protocol, exited or closed its
channel, missed a deadline, reported another engine's identity, ran GPU work or stopped itself while another engine
was timed (hotfloat.qualify.isolation), held more GPU memory than its share or squeezed another engine out of its own
(`memory`), or the validator's own infrastructure failed under it (`host`)."""
"""Baseline, candidate, and the correctness gate's twin (the baseline with the candidate's routed slots
stochastically rounded to a neighbouring value)."""
Decode = Literal["eager", "static", "graph"]
EngineKind = Literal["transformers", "sglang"]
AttentionBackend = Literal["triton", "flashinfer"]
"""SGLang's attention backend in a qualification engine (hotfloat_sglang.seams hooks the attention slots on each).
SGLang's own choice on Hopper, fa3, cannot be carried to a device call (hotfloat.engine.deviations)."""
ATTENTION_BACKENDS: tuple[str, ...] = get_args(AttentionBackend)
BACKEND_SEAMS: dict[str, tuple[AttentionBackend, ...]] = {
    "attention.decode": ("triton",),
    "attention.prefill": ("triton", "flashinfer"),
}
"""Slots whose seam lives on an attention backend's class -> the backends with one (the plugin's registry, held to
this by tests/qualify/test_options.py); an engine on another backend never calls the bundle for that slot."""


class Request(Record):
    """One request shape of the workload; its prompt tokens are drawn per pass from the workload seed."""

    prompt_len: Annotated[int, Field(ge=1, le=32768)]
    max_new_tokens: Annotated[int, Field(ge=1, le=4096)]
    kind: Literal["prefill", "decode"]
    """Which end of the serving mix the request stands for: long prompt and few tokens, or the reverse."""


class Workload(Record):
    """The fixed, validator-chosen load: batches of requests, the passes timed per run and the prompt seed."""

    batches: Annotated[list[list[Request]], Field(min_length=1)]
    """Requests are served batch by batch (static batching, left-padded prompts)."""
    passes: Annotated[int, Field(ge=1, le=4096)] = 2
    """Most timed rounds: in each round every engine serves one pass of every batch, on fresh prompt tokens drawn
    for that round (all engines get the same ones), so no pass can replay an earlier answer."""
    warmup_passes: Annotated[int, Field(ge=0, le=16)] = 1
    """Untimed passes before timing, on prompts the timed passes never use."""
    seed: int
    """Prompt-token seed; secret until the qualification ends, then published in the evidence."""
    vocab_size: Annotated[int, Field(ge=2)]


class EngineSpec(Record):
    """Which engine B and C run: the transformers stand-in or SGLang, on a validator-owned model."""

    kind: EngineKind = "transformers"
    """"sglang": SGLang's offline Engine (CUDA only) with the hotfloat_sglang plugin; "transformers": the CPU/CI
    stand-in (hotfloat.engine.transformers_engine) with the same seams."""
    preset: str
    """Key of hotfloat.engine.presets.PRESETS, e.g. 'tiny' (CPU) or 'qwen2-0.5b' (GPU): the shape of the random-weight
    model generated from a config (ignored when `model_path` names a checkpoint)."""
    model_path: str | None = None
    """SGLang only: a checkpoint directory the validator keeps on disk, instead of a generated model."""
    dtype: Literal["fp32", "bf16", "fp16"]
    device: Literal["cpu", "cuda"]
    weight_seed: int = 0
    """The model's weight draw (where torch's generator starts for the preset's random weights), not the workload
    seed (`Workload.seed`); the name is the one every committed evidence carries."""
    decode: Decode
    """How decode steps run, the same for B and C: "graph" replays captured CUDA graphs (the default on CUDA;
    SGLang's own graphs for the sglang engine), "static" runs the same fixed-shape steps eagerly, "eager" (the default
    on CPU) runs the model's own forward over a growing cache. None picks the device's default."""
    attention: AttentionBackend = "triton"
    """SGLang only: the attention backend B, C, B' and the twin all run; part of the engine identity, so a calibration
    record made on one backend names no verdict on another."""

    @model_validator(mode="before")
    @classmethod
    def _default_decode(cls, data):
        if isinstance(data, dict) and data.get("decode") is None:
            data = {**data, "decode": "graph" if data.get("device") == "cuda" else "eager"}
        return data

    @model_validator(mode="after")
    def _consistent(self):
        if self.decode == "graph" and self.device != "cuda":
            raise ValueError("decode 'graph' needs device 'cuda' (CUDA graphs)")
        if self.kind == "sglang" and (self.device != "cuda" or self.decode != "graph"):
            raise ValueError("the sglang engine needs device 'cuda' and serves through its own CUDA graphs")
        if self.model_path is not None and self.kind != "sglang":
            raise ValueError("model_path is for the sglang engine")
        if self.attention != "triton" and self.kind != "sglang":
            raise ValueError("an attention backend other than triton is for the sglang engine")
        return self


class RuleConfig(Record):
    """The decision rule's parameters; stored in the evidence so a later recompute uses exactly these.

    Per round r the pass times of B, C and B' give d_r = ln(B'/B) (the baseline against itself: noise plus any
    position or process bias) and e_r = ln(sqrt(B B') / C) (the candidate's gain in that round)."""

    margin: Annotated[float, Field(ge=0, lt=1)] = 0.005
    """PASS needs the improvement's lower confidence bound above this fraction of baseline pass time."""
    alpha: Annotated[float, Field(gt=0, lt=0.5)] = 0.01
    """One-sided error rate of the whole sequential test, split evenly over its looks."""
    noise_floor: Annotated[float, Field(ge=0, lt=1)] = 0.003
    """Smallest per-pass noise (relative s.d. of one engine's pass time within a round) the rule assumes."""
    process_floor: Annotated[float, Field(ge=0, lt=1)] = 0.003
    """Smallest process noise (relative s.d. of one engine process's persistent offset against another) the rule
    assumes; calibration measures it across stock engines."""
    drift_bound: Annotated[float, Field(gt=0, le=10)] = 0.02
    """|median d_r| (B against B', the same engine in another process and position) above this makes the
    qualification NO_DECISION, never a loss. Values of 1 and more only make sense on a shared CPU box whose load
    swings, as in CI."""
    carry_bound: Annotated[float, Field(gt=0, le=10)] = 0.01
    """A baseline pass timed right after C may be at most this much slower (log) than one timed right after the
    other baseline; above it, and clear of the noise, C FAILs: it left work running that slows the next engine
    (qualify.carryover). Values of 1 and more switch the check off on a shared CPU box, as in CI."""
    look_rounds: Annotated[int, Field(ge=3, le=512)] = 10
    """Rounds between looks; the rule looks after every `look_rounds` rounds."""
    max_looks: Annotated[int, Field(ge=1, le=64)] = 4
    """Budget: at most `look_rounds * max_looks` rounds."""
    trim: Annotated[float, Field(ge=0, le=0.5)] = 0.5
    """Fraction trimmed from each end of the e_r before averaging; 0.5 (the default) is their median. A stalled
    baseline pass makes C look faster in that round, so the estimate must shrug off a share of such rounds."""
    logprob_tol: Annotated[float, Field(ge=0)] = 0.0
    """Correctness gate: 0 demands identical tokens and logprobs; above 0, logprobs may differ by this much and a
    token may differ only where the baseline's top-two logprobs were within it (a near tie)."""
    gate_slack: Annotated[float, Field(ge=1, le=10)] = 2.0
    """Correctness gate with a twin: the candidate's logprob differences and path-leaving rate may be at most this
    many times the twin's (hotfloat.qualify.gate); 2 in evidence from before it was a rule parameter."""
    audit_slack: Annotated[float, Field(ge=0)] = 0.0
    """Per slot, the candidate's audited calls may be at most this many times as far from the fp32 reference as the
    stock kernel's on the same calls (median of each call's worst error over its verify tolerance, never below
    `AUDIT_FLOOR` of the tolerance); 0 switches the check off (evidence from before it). Per slot, so an exact op
    declared for another slot cannot widen it, as it widens the twin's end-to-end allowance."""
    version: Literal[1, 2] = 2
    """Which rule computed the interval: 1 took the per-pass noise from B against B' alone (evidence format v2);
    2 also carries the candidate's own dispersion (hotfloat.qualify.rule). Recorded so old evidence recomputes."""

    @property
    def max_rounds(self) -> int:
        return self.look_rounds * self.max_looks


class RunFrame(Record):
    """One resident engine's raw output over the qualification: per timed pass and request, the latency the validator
    measured and the greedy tokens. Frames come in protocol order: 0 is B, 1 is C, 2 is B' (the same stock engine as
    B, in another process)."""

    index: Annotated[int, Field(ge=0)]
    role: Role
    ok: bool
    """False when the engine failed (start-up, crash, timeout, a malformed or misattributed message)."""
    raised: bool = False
    """Evidence v2 only: the fault was the engine's own doing (v2 judged a candidate that died or stalled as
    infrastructure; v3 records `fault` and charges every fault but the host's to the engine that had it)."""
    fault: FaultKind | None = None
    """What went wrong when not ok (evidence v3)."""
    error: str | None = None
    pass_s: list[float] = []
    """[pass] seconds from sending the pass's first batch to receiving its last completion, batch after batch: the
    quantity the speed rule compares."""
    latency_s: list[list[float]] = []
    """[pass][request] seconds from the validator sending the batch to receiving that request's completion."""
    tokens: list[list[list[int]]] = []
    """[pass][request] greedy token ids."""
    logprobs: list[list[list[float]]] = []
    """[pass][request] log-probability of each chosen token."""
    margins: list[list[list[float]]] = []
    """[pass][request] top-1 minus top-2 log-probability at each step: how close the greedy choice was to a tie."""
    routed: dict[str, int] = {}
    """Calls per slot the seam router sent to the armed bundle (always empty-or-zero for B)."""
    stock: dict[str, int] = {}
    wall_s: float = 0.0
    """Engine lifetime seen by the validator, boot included; for budgeting, never for the decision."""
    boot_s: float = 0.0
    """Seconds from starting the engine to its ready message (build, arm, warm-up, graph capture)."""
    tokens_per_s: float = 0.0
    """Generated tokens over timed seconds, summed over passes: the throughput view of the same engine."""

    @model_validator(mode="after")
    def _shapes(self):
        n = len(self.latency_s)
        if self.ok and not len(self.pass_s) == len(self.tokens) == len(self.logprobs) == len(self.margins) == n:
            raise ValueError("an ok frame needs pass time, latency, tokens, logprobs and margins for every pass")
        return self


class Decision(Record):
    """The verdict of the gate and the rule over the frames."""

    status: Status
    reason: str
    score: Annotated[float, Field(ge=0)] = 0.0
    """max(0, improvement) when the rule PASSes; 0 otherwise."""
    improvement: float | None = None
    """Estimated relative improvement of C's pass time over the baseline's, 1 - C / sqrt(B B') (may be negative)."""
    lower: float | None = None
    """Lower confidence bound of the improvement at the deciding look."""
    upper: float | None = None
    drift: float | None = None
    """|median ln(B'/B)|: the baseline's bias against itself (process and position), charged to the interval."""
    rounds: int = 0
    """Timed rounds the decision used."""
    gate: Status = "N/A"
    """Outcome of the correctness gate alone."""
    fault: str | None = None
    """The engine fault that ended the run, as `role:kind` (e.g. `C:isolation`); settlement never re-runs a
    candidate-attributed FAIL (hotfloat.validator.settle)."""


class IsolationRecord(Record):
    """What kept idle engines idle around every timed pass (hotfloat.qualify.isolation), and what it cost."""

    mode: str
    """The protections in force, e.g. `sigstop+checkpoint-lock+quiet-probe+nvml-witness`; `sigstop` alone on CPU."""
    why_not: dict[str, str] = {}
    """Each protection not in force, and why (no driver, no checkpoint API, no NVML)."""
    passes: int = 0
    cost_ms_median: float = 0.0
    """Milliseconds per timed pass spent outside the timed window on locking, stopping, probing and witnessing."""
    cost_ms_max: float = 0.0
    lock_ms_median: float = 0.0
    lock_ms_max: float = 0.0
    probe_gap_us_max: float = 0.0
    """The quiet probe's longest timer gap over the whole run (microseconds)."""
    witness_samples: int = 0
