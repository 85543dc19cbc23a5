"""What may run before anything runs: scan's policy over the whole bundle, then whether each op applies here.

Imports no torch, so the verifier decides (and starts the first child) before paying for it.
"""

from __future__ import annotations

from collections.abc import Callable

from ..bundle import Bundle, Op
from ..scan import scan_bundle
from ..slots import Role, SlotSpec
from ..verdict import Status
from .records import VerifyOptions, VerifyRow

OnRow = Callable[[VerifyRow], None]


def scan_rows(bundle: Bundle, emit: OnRow) -> list[VerifyRow]:
    """One FAIL row per op when scan refuses the bundle (nothing then runs), else none. Like the validator, a finding
    anywhere refuses the whole bundle; each op's row names its own findings first."""
    report = scan_bundle(bundle)
    if report.clean:
        return []
    every = [f for o in report.ops for f in o.findings]
    rows = []
    for op in bundle.ops:
        own = next((o.findings for o in report.ops if o.op == op.key), [])
        named = own + [f for f in every if f not in own]
        more = f" (+{len(named) - 3} more)" if len(named) > 3 else ""
        rows.append(op_row(op, Status.FAIL, f"scan refused the bundle: {'; '.join(named[:3])}{more}"))
        emit(rows[-1])
    return rows


def applies(op: Op, arch: str) -> bool:
    """An op runs where its manifest says: cpu, or the device's sm_XX (an sm_90a build runs on sm_90)."""
    archs = set(op.entry.architectures)
    return arch in archs or f"{arch}a" in archs


def not_applicable(op: Op, slot: SlotSpec, options: VerifyOptions, arch: str) -> VerifyRow | None:
    """The N/A row when this verifier does not run the op here, else None."""
    if not applies(op, arch):
        hint = (
            '; add "cpu" to its architectures to verify it here' if arch == "cpu" and op.entry.kind == "python" else ""
        )
        return op_row(
            op, Status.N_A, f"not built for {arch} (architectures: {', '.join(op.entry.architectures)}){hint}"
        )
    if op.entry.kind != "python":
        return op_row(
            op,
            Status.N_A,
            f"ahead-of-time {op.entry.kind} kernel: verified on the native admission path (hotfloat build / admit)",
        )
    if slot.of_role(Role.GROUP):
        return op_row(op, Status.N_A, f"needs a process group: verify with --world-size {slot.world_size}")
    if not requested_dtypes(op, options):
        return op_row(op, Status.N_A, f"no requested dtype among the op's {op.dtypes}")
    return None


def requested_dtypes(op: Op, options: VerifyOptions) -> list[str]:
    """The op's dtypes this run verifies: all it declares, or those of them the options name."""
    return [d for d in op.dtypes if options.dtypes is None or d in options.dtypes]


def op_row(op: Op, status: Status, reason: str, dtype: str = "-", shape: str = "-") -> VerifyRow:
    """A row about the op as a whole (or one graph of it) rather than one case's trials."""
    return VerifyRow(
        slot=op.entry.slot, variant=op.entry.variant, dtype=dtype, shape=shape, status=status, reason=reason
    )
