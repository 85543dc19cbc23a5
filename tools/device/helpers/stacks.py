"""Counts the stack samples engines wrote to their logs (HOTFLOAT_STACK_SAMPLES, hotfloat_sglang.stacks): per
process, the frames most samples were in (inclusive: anywhere on the stack; self: innermost), and the seconds no
sample was taken (the main thread held the GIL in native code). Run: python3 tools/device/helpers/stacks.py LOG... [--top N]"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from itertools import pairwise

SAMPLE = re.compile(r"hotfloat stack (\d+) ([\d.]+): (.*)$")


def read(paths: list[str]) -> dict[tuple[str, str], list[tuple[float, list[str]]]]:
    """(log, pid) -> [(seconds, frames innermost first)]."""
    out: dict[tuple[str, str], list[tuple[float, list[str]]]] = defaultdict(list)
    for path in paths:
        with open(path, errors="replace") as f:
            for raw in f.read().replace("\r", "\n").splitlines():
                if m := SAMPLE.search(raw):
                    out[(path.rsplit("/", 1)[-1], m.group(1))].append((float(m.group(2)), m.group(3).split(" < ")))
    return out


def report(samples: list[tuple[float, list[str]]], top: int) -> list[str]:
    times = [t for t, _ in samples]
    steps = sorted(b - a for a, b in pairwise(times))
    usual = steps[len(steps) // 2] if steps else 0.0
    gaps = sum(s - usual for s in steps if s > 2 * usual)
    lines = [f"  {len(samples)} samples over {times[-1] - times[0]:.1f} s, {gaps:.1f} s in gaps (no sample taken)"]
    for label, counts in (
        ("inclusive", Counter(f for _, fs in samples for f in set(fs))),
        ("self", Counter(fs[0] for _, fs in samples if fs)),
    ):
        lines.append(f"  {label}:")
        lines += [f"    {100 * n / len(samples):5.1f}%  {frame}" for frame, n in counts.most_common(top)]
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args()
    try:
        found = read(args.logs)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not found:
        print("error: no stack samples in these logs (was HOTFLOAT_STACK_SAMPLES set?)", file=sys.stderr)
        return 1
    for (log, pid), samples in sorted(found.items()):
        print(f"{log} pid {pid}")
        print("\n".join(report(samples, args.top)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
