#!/usr/bin/env python3
"""The speed rule's PASS rates on simulated qualifications, version 1 against version 2, under the deployed CUDA rule.

Usage: .venv/bin/python tools/rule_sim.py [--draws 4000] [--seed 0] [--json]

Each qualification: a common slow-down per round (cancels), a persistent offset per engine process at the process
floor (0.1%), per-pass noise of 0.4% on B and B' and of its own on C, and C's pass times scaled by 1 - effect. Effect
0 and 0.5% (the margin) are false PASS rates, the rest power. The last rows give every engine the H200's noise, once
with 5% of the baselines' passes stalled by 30%. Every cell of a row decides the same draws with both versions.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from hotfloat.qualify.options import default_rule
from hotfloat.qualify.rule import decide

EFFECTS = (0.0, 0.005, 0.01, 0.02, 0.05)
CASES = {
    "C 0.4%": dict(c_sigma=0.004),
    "C 1%": dict(c_sigma=0.01),
    "C 2%": dict(c_sigma=0.02),
    "C 3%": dict(c_sigma=0.03),
    "C t3 at 2%": dict(c_sigma=0.02, c_t3=True),
    "C t3 at 3%": dict(c_sigma=0.03, c_t3=True),
    "C 0.4%, 5% stalled/sped": dict(c_tail=0.05),
    "C 2%, 5% stalled/sped": dict(c_sigma=0.02, c_tail=0.05),
    "all 0.5%": dict(sigma=0.005),
    "all 0.4%, B stalls": dict(b_stall=0.05),
}
"""Per-pass noise of C (B and B' at 0.4% unless said): normal, Student's t with 3 degrees of freedom at that s.d., or
with 5% of C's passes stalled or sped by 10-30%."""


def trials(rng, count, rounds, effect, sigma=0.004, c_sigma=None, tau=0.001, c_t3=False, c_tail=0.0, b_stall=0.0):
    """[qualification, round, (B, C, B')] pass times."""
    noise = rng.normal(0, 1, (count, rounds, 3)) * sigma
    noise[:, :, 1] = (rng.standard_t(3, (count, rounds)) / np.sqrt(3) if c_t3 else noise[:, :, 1] / sigma) * (
        c_sigma or sigma
    )
    hit = rng.random((count, rounds)) < c_tail
    noise[:, :, 1] += np.where(hit, np.log1p(rng.uniform(0.1, 0.3, hit.shape) * rng.choice([-1, 1], hit.shape)), 0)
    noise[:, :, [0, 2]] += np.where(rng.random((count, rounds, 2)) < b_stall, np.log(1.3), 0)
    x = 0.5 * np.exp(rng.normal(0, tau, (count, 1, 3)) + rng.normal(0, 0.05, (count, rounds, 1)) + noise)
    x[:, :, 1] *= 1 - effect
    return x


def table(draws: int, seed: int) -> list[dict]:
    """One row per case and effect: the PASS rate of each version over the same draws."""
    v2 = default_rule("cuda", "NVIDIA H200")
    rules = {1: v2.model_copy(update={"version": 1}), 2: v2}
    rows = []
    for i, (case, noise) in enumerate(CASES.items()):
        for j, effect in enumerate(EFFECTS):
            x = trials(np.random.default_rng([seed, i, j]), draws, v2.max_rounds, effect, **noise)
            rate = {
                v: float(np.mean([decide(q[:, 0], q[:, 1], q[:, 2], r).status == "PASS" for q in x]))
                for v, r in rules.items()
            }
            rows.append(dict(case=case, effect=effect, draws=draws, v1=rate[1], v2=rate[2]))
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=4000, help="qualifications per cell")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="rows as JSON instead of a table")
    args = ap.parse_args()
    rows = table(args.draws, args.seed)
    if args.json:
        json.dump(
            dict(rule=default_rule("cuda", "NVIDIA H200").model_dump(exclude={"version"}), rows=rows),
            sys.stdout,
            indent=1,
        )
        print()
        return 0
    print(
        f"PASS rate, v1 -> v2, {args.draws} qualifications per cell (deployed CUDA rule: {default_rule('cuda', 'NVIDIA H200')})"
    )
    print(f"| {'case':<24} | " + " | ".join(f"{f'effect {e:.1%}':<18}" for e in EFFECTS) + " |")
    print(f"|{'-' * 26}|" + "|".join("-" * 20 for _ in EFFECTS) + "|")
    for case in CASES:
        cells = [f"{r['v1']:6.2%} -> {r['v2']:6.2%}" for r in rows if r["case"] == case]
        print(f"| {case:<24} | " + " | ".join(f"{c:<18}" for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
