"""Qualification records: the workload, the rule's parameters, every raw timing frame and the decision.

They are the evidence format: a decision must be recomputable from these records alone, so every field the rule
reads is here, and nothing outside them (no clock, no randomness without its seed) enters the decision.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Status = Literal["PASS", "FAIL", "NO_DECISION", "N/A"]
Role = Literal["B", "C"]
Decode = Literal["eager", "static", "graph"]


class Record(BaseModel):
    """Strict, frozen, documented; evidence files are read back as untrusted input."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


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
    passes: Annotated[int, Field(ge=1, le=64)] = 2
    """Timed passes per run; each pass draws fresh prompt tokens, so no pass can replay an earlier answer."""
    warmup_passes: Annotated[int, Field(ge=0, le=16)] = 1
    """Untimed passes before timing, on prompts the timed passes never use."""
    seed: int
    """Prompt-token seed; secret until the qualification ends, then published in the evidence."""
    vocab_size: Annotated[int, Field(ge=2)]


class EngineSpec(Record):
    """Which reference engine to build: a transformers causal LM from a named preset with seeded random weights."""

    preset: str
    """Key of hotfloat.qualify.engine.PRESETS, e.g. 'tiny' (CPU) or 'qwen2-0.5b' (GPU)."""
    dtype: Literal["fp32", "bf16", "fp16"]
    device: Literal["cpu", "cuda"]
    weight_seed: int = 0
    decode: Decode
    """How decode steps run, the same for B and C: "graph" replays one captured CUDA graph per batch shape (the
    default on CUDA, as SGLang serves), "static" runs the same fixed-shape steps eagerly, "eager" (the default on
    CPU) runs the model's own forward over a growing cache. None picks the device's default."""

    @model_validator(mode="before")
    @classmethod
    def _default_decode(cls, data):
        if isinstance(data, dict) and data.get("decode") is None:
            data = {**data, "decode": "graph" if data.get("device") == "cuda" else "eager"}
        return data

    @model_validator(mode="after")
    def _graph_needs_cuda(self):
        if self.decode == "graph" and self.device != "cuda":
            raise ValueError("decode 'graph' needs device 'cuda' (CUDA graphs)")
        return self


class RuleConfig(Record):
    """The decision rule's parameters; stored in the evidence so a later recompute uses exactly these."""

    margin: Annotated[float, Field(ge=0, lt=1)] = 0.005
    """PASS needs the improvement's lower confidence bound above this fraction of baseline latency."""
    alpha: Annotated[float, Field(gt=0, lt=0.5)] = 0.01
    """One-sided error rate of the whole sequential test, split evenly over its looks."""
    noise_floor: Annotated[float, Field(ge=0, lt=1)] = 0.003
    """Smallest run-to-run noise (relative s.d.) the rule assumes; set it from `hotfloat qualify calibrate`."""
    drift_bound: Annotated[float, Field(gt=0, le=10)] = 0.02
    """Baseline B vs B' median drift above this makes the qualification NO_DECISION, never a loss. Values of 1 and
    more (a B' twice as slow as B) only make sense on a shared CPU box whose load swings, as in CI."""
    max_pairs: Annotated[int, Field(ge=1, le=32)] = 3
    """Budget: at most this many candidate runs (each bracketed by baseline runs)."""
    bootstrap: Annotated[int, Field(ge=100, le=100000)] = 2000
    """Paired bootstrap resamples over requests."""
    bootstrap_seed: int = 0
    logprob_tol: Annotated[float, Field(ge=0)] = 0.0
    """Correctness gate: 0 demands identical tokens and logprobs; above 0, logprobs may differ by this much and a
    token may differ only where the baseline's top-two logprobs were within it (a near tie)."""


class RunFrame(Record):
    """One engine process's raw output: per pass and request, latency seen by the parent and the greedy tokens."""

    index: Annotated[int, Field(ge=0)]
    role: Role
    ok: bool
    """False when the engine process failed (start-up, crash, timeout, malformed message): infrastructure."""
    raised: bool = False
    """The engine itself reported an exception (as opposed to dying silently or timing out)."""
    error: str | None = None
    latency_s: list[list[float]] = []
    """[pass][request] seconds from the parent sending the batch to receiving that request's completion."""
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
    """Process lifetime seen by the parent, including start-up; for budgeting, never for the decision."""
    tokens_per_s: float = 0.0
    """Generated tokens over timed seconds, summed over passes: the throughput view of the same run."""

    @model_validator(mode="after")
    def _shapes(self):
        n = len(self.latency_s)
        if self.ok and (n == 0 or not len(self.tokens) == len(self.logprobs) == len(self.margins) == n):
            raise ValueError("an ok frame needs latency, tokens, logprobs and margins for every pass")
        return self


class Decision(Record):
    """The verdict of the gate and the rule over the frames."""

    status: Status
    reason: str
    score: Annotated[float, Field(ge=0)] = 0.0
    """Median over requests of max(0, (b - c) / b); 0 unless the gate passed."""
    improvement: float | None = None
    """Median relative improvement (may be negative)."""
    lower: float | None = None
    """Lower confidence bound of the improvement at the deciding look."""
    upper: float | None = None
    drift: float | None = None
    """Largest |B vs B'| median drift seen."""
    pairs: int = 0
    """Candidate runs the decision used."""
    gate: Status = "N/A"
    """Outcome of the correctness gate alone."""


class Evidence(Record):
    """Everything needed to recompute a decision: identities, workload, parameters, raw frames and the verdict."""

    format: Literal["hotfloat-qualify-evidence-v1"] = "hotfloat-qualify-evidence-v1"
    bundle_identity: str
    baseline_identity: str | None = None
    """The incumbent bundle armed in B runs, or None for the stock engine."""
    engine: EngineSpec
    engine_identity: str
    """SHA-256 of the engine's model config and software versions, computed in the engine process."""
    workload: Workload
    rule: RuleConfig
    env: dict = {}
    """hotfloat.env.collect() of the validator host (GPU, driver, CUDA, torch, triton versions)."""
    sandboxed: bool
    """Whether the engine processes ran inside the candidate sandbox; False only by the validator's explicit opt-out."""
    frames: list[RunFrame]
    decision: Decision
    started: str
    """UTC ISO time the qualification started."""
    seconds: float


class QualifyResult(Record):
    """What a caller (the CLI, the Qualification service) gets back: the verdict and its evidence."""

    status: Status
    score: float
    reason: str
    evidence: Evidence
