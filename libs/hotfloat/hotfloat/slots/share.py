"""How much of an engine step each slot holds, measured on a GPU and committed as a record beside this module
(`share-<gpu>-<preset>.json`, made by the slot_share recipe, tools/device/recipes/slot_share.sh): a kernel author sees where a faster kernel can move the
whole engine (by Amdahl, a slot holding s of a step caps a k-times faster kernel's gain at s * (1 - 1/k)).

A share is the GPU time of a slot's stock calls inside one step of the qualification workload over the GPU time of
everything that step launched, per model and step kind (a decode step of the decode batch, a prefill step of the
prefill batch). There are no numbers here until a device run made them: `load_records` returns what is committed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ..record import Record
from .registry import SLOTS

RECORDS = Path(__file__).parent
"""Where the committed records live (shipped with the package; docs/slot-share-<gpu>-<preset>.json link here)."""
PATTERN = "share-*.json"


class StepShare(Record):
    """One kind of engine step, averaged over the steps measured."""

    steps: int
    """Steps profiled."""
    tokens: int
    """Tokens one step computes: its requests at decode, its prompts' tokens at prefill."""
    step_us: float
    """GPU time per step: every kernel, copy and fill the step launched."""
    slots: dict[str, float]
    """Per slot, GPU time per step inside the slot's calls (its stock kernels)."""
    calls: dict[str, float]
    """Per slot, calls per step."""
    unattributed_us: float = 0.0
    """GPU time per step the trace could not tie to a launch inside the step (counted in no slot, not in step_us)."""


class ModelShare(Record):
    """One model's decode and prefill steps."""

    preset: str
    """The qualification preset (hotfloat.engine.presets) the model was generated from."""
    dtype: str
    decode: StepShare
    prefill: StepShare


class ShareRecord(Record):
    """A device run's measurement, with how and where it was made."""

    format: Literal["hotfloat-slot-share-v1"] = "hotfloat-slot-share-v1"
    gpu: str
    """The GPU as torch names it, e.g. 'NVIDIA H200'."""
    measured_at: str
    command: str
    """The command that made the record, to run it again."""
    method: str
    versions: dict[str, str]
    """sglang, torch, triton and CUDA of the run."""
    models: list[ModelShare]


def load_records(directory: Path | None = None) -> list[ShareRecord]:
    """Every committed record (in RECORDS unless another directory is named), by file name; none when no device run
    has been committed."""
    return [ShareRecord.model_validate_json(p.read_text()) for p in sorted((directory or RECORDS).glob(PATTERN))]


def rows(step: StepShare) -> list[tuple[str, float | None, float | None, float]]:
    """(slot, µs per step, share of the step, calls per step) for every registered slot, the rest of the step last
    as "(other)"; a slot the record does not name was not measured (None), one it names with no calls holds 0."""
    out = []
    for name in SLOTS:
        us = step.slots.get(name)
        out.append((name, us, None if us is None else us / step.step_us, step.calls.get(name, 0.0)))
    rest = step.step_us - sum(us for _, us, _, _ in out if us is not None)
    return [*out, ("(other)", rest, rest / step.step_us, 0.0)]


NOT_MEASURED = (
    "no slot-share measurement is committed: run `bash tools/device/run.sh engine_install:90 slot_share:500` on a GPU (it boots SGLang on the "
    "qualification models and times each slot's stock calls inside a decode and a prefill step), then commit the "
    "record it writes as libs/hotfloat/hotfloat/slots/share-<gpu>-<preset>.json"
)
