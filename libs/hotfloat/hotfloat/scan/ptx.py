"""What `tl.inline_asm_elementwise` may contain: a literal PTX string of register-only arithmetic and conversions.

PTX reads clocks and placement (%globaltimer, %clock64, %smid, %warpid) and reaches memory the kernel was not handed
(ld, st, atom, cp.async) in one instruction each, and Triton passes the string through unchecked. Arithmetic on the
call's own operands ($0, $1, ...) and on registers the string declares can do neither, so that is all it may hold
(docs/security.md, 'Inline assembly')."""

from __future__ import annotations

import re

OPCODES = frozenset(
    "abs add addc and bfe bfi bfind brev clz cnot copysign cos cvt div dp2a dp4a ex2 fma fns lg2 lop3 mad mad24 madc "
    "max min mov mul mul24 neg not or popc prmt rcp rem rsqrt sad selp set setp shf shl shr sin slct sqrt sub subc "
    "tanh testp xor".split()
)
"""Register-to-register instructions: no loads, stores, atomics, barriers, fences, shuffles, votes, calls or branches."""
SPECIAL = re.compile(
    r"%(tid|ntid|lane|warp|nwarp|cta|ncta|sm|nsm|grid|is_|cluster|ncluster|clock|pm|envreg|globaltimer|reserved|"
    r"total_smem|aggr_smem|dynamic_smem|current_graph)",
    re.I,
)
"""PTX's special registers: clocks, timers, SM, warp and lane ids, performance counters, environment registers."""
NAME = re.compile(r"^[%A-Za-z_][A-Za-z0-9_$]*$")
IMMEDIATE = re.compile(r"^-?(0[xX][0-9a-fA-F]+U?|0[fFdD][0-9a-fA-F]+|\d+(\.\d*)?([eE][-+]?\d+)?U?)$")
CONSTRAINT = re.compile(r"^[=+&]*[rlhfdc]$|^\d+$")


def asm_problem(asm: str) -> str | None:
    """Why this inline assembly is refused, or None."""
    text = re.sub(r"//[^\n]*", " ", asm)
    if bad := set(re.sub(r"[A-Za-z0-9_.$%@!,;{}<>\s+-]", "", text)):
        return f"inline assembly with {''.join(sorted(bad))!r}: only register operands (no memory addressing)"
    declared: set[str] = set()
    prefixes: set[str] = set()
    for stmt in (s.strip().lstrip("{}").strip() for s in text.split(";")):
        stmt = stmt.rstrip("}").strip()
        if not stmt:
            continue
        if stmt.startswith(".reg"):
            if why := _declare(stmt, declared, prefixes):
                return why
            continue
        words = stmt.replace("{", " ").replace("}", " ").replace(",", " ").split()
        if words[0].startswith("@"):
            words = [words[0].lstrip("@!"), *words[1:]]
            if words[0] not in declared:
                return f"inline assembly guard @{words[0]}: not a register the string declares"
            words = words[1:]
        if not words or words[0].split(".")[0] not in OPCODES:
            return f"inline assembly instruction {stmt.split()[0]!r}: not register-only arithmetic or conversion"
        for op in words[1:]:
            if why := _operand(op, declared, prefixes):
                return why
    return None


def _declare(stmt: str, declared: set[str], prefixes: set[str]) -> str | None:
    """`.reg .b32 a, b<4>`: records the names, refusing a special register's."""
    names = [w for w in stmt.replace(",", " ").split()[1:] if not w.startswith(".")]
    for name in names:
        base = name.split("<")[0]
        if not NAME.match(base) or SPECIAL.match(base):
            return f"inline assembly declares {name!r}: not a plain register name"
        (prefixes if "<" in name else declared).add(base)
    return None


def _operand(op: str, declared: set[str], prefixes: set[str]) -> str | None:
    if re.fullmatch(r"\$\d+", op) or IMMEDIATE.match(op) or op == "_" or op in declared:
        return None
    if any(op.startswith(p) and op[len(p) :].isdigit() for p in prefixes):
        return None
    if SPECIAL.match(op):
        return f"inline assembly reads {op}: a special register (clock, timer, SM, warp or lane id)"
    return f"inline assembly operand {op!r}: only $n operands, declared registers and immediates"


def constraints_problem(constraints: str) -> str | None:
    """Register constraints only ("=r,r,l"): no memory ("m") operands."""
    bad = [c for c in constraints.replace(" ", "").split(",") if not CONSTRAINT.match(c)]
    return f"inline assembly constraints {bad}: registers only" if bad else None
