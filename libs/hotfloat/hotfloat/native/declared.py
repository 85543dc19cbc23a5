"""The one check of a cubin against its manifest declaration, shared by the compiler (before it records a cubin) and
admission (before it hands one to the driver), so both refuse exactly the same cubins."""

from __future__ import annotations

from ..bundle import Op
from . import elf, params


def declared_types(op: Op, dtype: str) -> list[str]:
    """The declared parameter types of `op` built for `dtype` ("*T" becomes a pointer to that dtype)."""
    return [f"*{dtype}" if p.type == "*T" else p.type for p in op.entry.kernel.params]


def check_cubin(op: Op, dtype: str, symbol: str, data: bytes) -> tuple[tuple[int, int], ...]:
    """The declared (offset, size) layout when `data` passes the ELF gate and holds exactly `symbol`, named as `op`
    declares it and with the declared parameter layout; otherwise raises elf.CubinRefused saying why."""
    cubin = elf.gate(data)
    if list(cubin.kernels) != [symbol]:
        raise elf.CubinRefused(
            f"the cubin defines kernels {sorted(cubin.kernels)}, not exactly the declared [{symbol}]"
        )
    if op.entry.kind == "triton":
        expected, named = op.entry.entry, symbol == op.entry.entry
    else:  # CuTe mangles the @cute.kernel name with the argument types; the prefix is what the author controls
        expected = f"kernel_cutlass_{op.entry.kernel.symbol or op.entry.entry}_"
        named = symbol.startswith(expected)
    if not named:
        raise elf.CubinRefused(f"kernel {symbol!r} is not the declared one ({expected})")
    layout = params.layout(declared_types(op, dtype), op.entry.kind)
    if cubin.kernels[symbol] != layout:
        raise elf.CubinRefused(
            f"kernel parameter layout {list(cubin.kernels[symbol])} differs from the declared {list(layout)}"
        )
    return layout
