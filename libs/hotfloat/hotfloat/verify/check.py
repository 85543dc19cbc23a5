"""The trusted judgement of one call: compares the child's reply with the reference computed in this process.

Checks run in a fixed order and the first failure is the reason, so a verdict names the most specific cause:
the call raised, returned a value, moved its outputs, wrote after returning, mutated inputs, wrote outside
the output view, left elements unwritten, produced non-finite values, or missed the tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..slots import SlotSpec
from . import wire
from .inputs import Prepared

_RESULT_KEYS = {"returned", "moved", "outputs_digest", "input_digests"}


@dataclass(frozen=True)
class Outcome:
    """One trial's judgement."""

    ok: bool
    reason: str = ""
    max_abs_err: float | None = None


def _fail(reason: str, err: float | None = None) -> Outcome:
    return Outcome(False, reason, err)


def judge(slot: SlotSpec, dtype: str, prep: Prepared, frame: wire.Frame) -> Outcome:
    """PASS only if every output element of the view is within tolerance and nothing else was touched."""
    if frame.kind == "raised":
        return _fail(f"kernel raised {_clean(frame.meta.get('error'))}")
    meta = frame.meta
    if frame.kind != "result" or set(meta) != _RESULT_KEYS:
        return _fail(f"protocol violation: unexpected {frame.kind!r} reply")
    if meta["returned"] is not None:
        return _fail(f"entry returned a {_clean(meta['returned'])}; the ABI writes into `out` and returns None")
    if meta["moved"]:
        role = "output" if any(n in prep.outputs for n in meta["moved"]) else "input"
        return _fail(f"{role} identity changed (storage, shape or stride of {_clean(meta['moved'])} replaced)")
    got = {h.name: (h, data) for h, data in frame.tensors}
    if set(got) != set(prep.outputs) or any(got[n][0] != h for n, h in prep.outputs.items()):
        return _fail("protocol violation: returned output headers differ from the buffers sent")
    snapshot = {n: wire.to_tensor(h, data) for n, (h, data) in got.items()}
    if meta["outputs_digest"] != wire.digest([snapshot[n][0] for n in prep.outputs]):
        return _fail("output changed after the call returned (deferred or asynchronous write)")
    sent = {h.name: (h, data) for h, data in prep.sent}
    digests = meta["input_digests"]
    if not isinstance(digests, dict) or set(digests) != set(prep.inputs):
        return _fail("protocol violation: the reply's input digests do not name the inputs sent")
    written = [n for n in prep.inputs if digests[n] != wire.digest([wire.to_tensor(*sent[n])[0]])]
    if written:
        return _fail(f"input mutated: {', '.join(written)} written; inputs must be read-only")
    tol = slot.tolerances[dtype]
    worst: float | None = None
    for name, header in prep.outputs.items():
        flat, view = snapshot[name]
        poisoned_flat, poisoned = wire.to_tensor(*sent[name])
        reason = _outside_view(flat, header, poisoned_flat)
        if reason:
            return _fail(f"{name}: {reason}")
        out, ref = view.float(), prep.expected[name].float()
        diff = (out - ref).abs()
        wrong = ~(diff <= tol.atol + tol.rtol * prep.scales[name])  # NaN compares false, so NaN is wrong
        untouched = int((wrong & (_bits(view) == _bits(poisoned))).sum())
        if untouched and 2 * untouched >= int(wrong.sum()):  # a finite poison can equal a wrong value by chance
            return _fail(f"{name}: {untouched} of {view.numel()} elements left unwritten (still the poison sent)")
        finite = torch.isfinite(out)
        if not bool(finite.all()):
            return _fail(f"{name}: {int((~finite).sum())} non-finite elements (NaN/Inf)")
        err = float(diff.max()) if diff.numel() else 0.0
        worst = err if worst is None else max(worst, err)
        bad = int(wrong.sum())
        if bad:
            return _fail(
                f"{name}: {bad} of {out.numel()} elements outside atol={tol.atol:g} rtol={tol.rtol:g} "
                f"(max abs err {err:.3g})",
                worst,
            )
    return Outcome(True, "", worst)


def reply_error(frame: wire.Frame, expected: str) -> str:
    """Why a reply to load or capture is not the expected acknowledgement."""
    if frame.kind == "raised":
        return _clean(frame.meta.get("error"))
    return f"protocol violation: {frame.kind!r} reply where {expected!r} was expected"


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.view(torch.int16 if t.element_size() == 2 else torch.int32)


def _outside_view(flat: torch.Tensor, header: wire.TensorHeader, sent: torch.Tensor) -> str:
    """Bytes of the buffer outside the strided view must be exactly as sent (row padding is not the kernel's)."""
    got, want = _bits(flat), _bits(sent)
    patched = got.clone()
    patched.as_strided(header.shape, header.stride).copy_(want.as_strided(header.shape, header.stride))
    changed = int((patched != want).sum())
    return f"{changed} elements written outside the view (the row stride was ignored)" if changed else ""


def _clean(text: object) -> str:
    """Child-supplied text is shown, never trusted: printable, one line, bounded."""
    s = "".join(c if c.isprintable() else " " for c in str(text))
    return s[:300]
