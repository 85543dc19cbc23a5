"""The bench's output check: every call's outputs against the reference of its input set, within the slot's
tolerance, so a fast kernel that is wrong is reported as failed rather than timed."""

from __future__ import annotations

import torch

from ..slots import Role, SlotSpec


def check(slot: SlotSpec, dtype: str, results, refs, phase: str) -> str:
    """'' when every call's outputs match the reference of its input set within the slot's tolerance (`refs`: each
    set's `SlotSpec.expect` pair). The counts of
    bad elements are gathered on the device and read back once (one sync per check, not one per output)."""
    tol = slot.tolerances[dtype]
    names = [a.name for a in slot.of_role(Role.OUTPUT)]
    counts, where = [], []
    for i, outs in enumerate(results):
        ref, scales = refs[i % len(refs)]
        if len(outs) != len(names):
            return f"{phase}: {len(outs)} outputs where the slot has {len(names)} (call {i})"
        for name, got in zip(names, outs, strict=True):
            want = ref[name]
            if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
                return f"{phase}: output {name} has the wrong shape or type"
            a = got.float()
            bound = tol.atol + tol.rtol * scales[name]
            counts.append((~(torch.isfinite(a) & ((a - want).abs() <= bound))).sum())
            where.append((i, name, a.numel()))
    for (i, name, n), bad in zip(where, torch.stack(counts).tolist() if counts else [], strict=True):
        if bad:
            return f"{phase}: {bad} of {n} elements of {name} out of tolerance (call {i})"
    return ""
