"""The calibrate recipe's next wave: which engines it boots, and whether it still fits the call.

A wave is one boot of resident engines and its rounds; a call's last wave must finish inside the recipe's limit, or
its raw file (written when the wave ends) is lost with the unit in it. So a wave starts only when the time left holds
the longest seeded wave seen so far (waves after the first find the JIT caches warm, the first compiles), with a
margin, and its own budget is cut to the time left. `CAL_PLAN` names the compositions the waves cycle through: "3"
boots three stock engines (one null unit), "1+0.02:2" one stock engine between two that a stock engine is 2% faster
than (one positive control), so "3 3 1+0.02:2" makes two null units for each control.

    python3 cal_waves.py PLAN WAVE LEFT_S BUDGET_S [SECONDS_OF_EARLIER_WAVES...]
prints the wave's `qualify calibrate collect` arguments and its budget, or exits 1 when no wave should start; a bad
plan is one line on stderr and exit 2.
"""

from __future__ import annotations

import re
import sys

MARGIN = 1.15
"""A wave's time varies with its boots (seeded boots on one H100 spread about 10%)."""
RESERVE_S = 40
"""Left after the last wave: the quick analysis, the results archive."""
PART = re.compile(r"^(\d+)((?:\+\d*\.?\d+:\d+)*)$")


def parse(plan: str) -> list[tuple[int, list[tuple[str, int]]]]:
    """'3 1+0.02:2' -> [(3, []), (1, [('0.02', 2)])]; ValueError names the part that is not a composition."""
    out = []
    for part in plan.split():
        m = PART.match(part)
        if not m:
            raise ValueError(f"CAL_PLAN part {part!r} is not STOCK or STOCK+EFFECT:COUNT[+...] (e.g. 3 or 1+0.02:2)")
        handicaps = [(e, int(n)) for e, n in (h.split(":") for h in m.group(2).split("+")[1:])]
        if int(m.group(1)) + sum(n for _, n in handicaps) < 3 or any(not 0 < float(e) < 1 for e, _ in handicaps):
            raise ValueError(f"CAL_PLAN part {part!r}: a wave needs three engines and effects between 0 and 1")
        out.append((int(m.group(1)), handicaps))
    if not out:
        raise ValueError("CAL_PLAN is empty")
    return out


def next_wave(
    plan: str, wave: int, left_s: float, budget_s: float, earlier: list[float]
) -> tuple[list[str], int] | None:
    """The arguments and budget of wave `wave` (1-based), or None when what is left cannot hold it."""
    waves = parse(plan)
    stock, handicaps = waves[(wave - 1) % len(waves)]
    room = left_s - RESERVE_S
    seeded = earlier[1:] or earlier  # the first wave compiled; later ones show what a seeded wave costs
    if seeded and room < MARGIN * max(seeded):
        return None
    budget = int(min(budget_s, room))
    if budget <= 0:
        return None
    args = ["--stock", str(stock)]
    for effect, count in handicaps:
        args += ["--handicap", effect, str(count)]
    return args, budget


def main(argv: list[str]) -> int:
    try:
        plan, wave, left, budget, *earlier = argv
        got = next_wave(plan, int(wave), float(left), float(budget), [float(s) for s in earlier])
    except ValueError as e:
        print(f"cal_waves: {e}", file=sys.stderr)
        return 2
    if got is None:
        return 1
    args, budget_s = got
    print(" ".join(args), budget_s)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
