"""The generated tables about noise (tools/calibration_tables.py writes them into the docs): per raw collection its
engines, boots and pass times, where the spread sits and what the host did meanwhile, B against B' and the carry-over
on honest engines; and the engine-noise table issue 18 measured on the H200."""

from __future__ import annotations

import json

import numpy as np
from calibration_sources import RAWS, RUNS, md_table, raw_file, span


def collections() -> str:
    """Per raw file: engines, boots, rounds and pass times."""
    from hotfloat.qualify.calibrate.noise import series

    rows = []
    for label, name in RAWS.items():
        raw = raw_file(name)
        x = series(raw, raw.engines)
        rows.append(
            [
                label,
                " ".join(raw.engines),
                "yes" if raw.sandboxed else "no",
                span(raw.boot_s.values(), "{:.1f}", "-") + " s",
                len(raw.rounds),
                f"{np.median(np.diff([r.t for r in raw.rounds])):.2f} s",
                span(1e3 * np.median(x, axis=0), "{:.1f}", "-") + " ms",
                span(1e3 * x.min(axis=0), "{:.1f}", "-") + " ms",
                span(100 * x.std(axis=0) / x.mean(axis=0), "{:.2f}", "-") + "%",
            ]
        )
    return md_table(
        [
            "collection",
            "engines",
            "sandboxed",
            "boots",
            "rounds",
            "per round",
            "pass medians",
            "pass minima",
            "per-engine CV",
        ],
        rows,
    )


def spread() -> str:
    """Per raw file: where the spread sits (within a round, or common to the round) and what the host did meanwhile."""
    from hotfloat.qualify.calibrate.noise import series

    rows = []
    for label, name in RAWS.items():
        raw = raw_file(name)
        x = series(raw, raw.engines)
        y = np.log(x)
        common = np.median(y, axis=1, keepdims=True)
        dev = (y - common).ravel()
        row = [
            label,
            f"{np.std(dev):.2%} (MAD {1.4826 * np.median(np.abs(dev - np.median(dev))):.2%})",
            f"{np.std(common):.2%}",
        ]
        if all(n in r.host for r in raw.rounds for n in raw.engines):
            host = lambda key: np.array([[r.host[n][key] for n in raw.engines] for r in raw.rounds])  # noqa: E731
            mhz, cpu = host("sm_mhz"), host("cpu_s")
            row += [
                f"{1e3 * host('steal_s').mean():.1f} ms",
                f"{span(mhz.ravel(), '{:.0f}', '-')} (median {np.median(mhz):.0f})",
                f"{np.median(cpu / x):.2f}, correlation {np.corrcoef(cpu.ravel(), x.ravel())[0, 1]:.3f}",
            ]
        else:
            row += ["-", "-", "- (not recorded then)"]
        rows.append(row)
    return md_table(
        [
            "collection",
            "pass against its round's median: s.d.",
            "round's median: s.d. across rounds",
            "stolen per pass (mean)",
            "SM clock MHz after each pass",
            "engine CPU s per pass s (median)",
        ],
        rows,
    )


def pairs() -> str:
    """Per raw file: B against B' over every stock pair, and the carry-over check on honest engines."""
    from hotfloat.qualify.calibrate.noise import noise

    rows = []
    for label, name in RAWS.items():
        nz = noise([raw_file(name)])
        sd = [v for k, v in nz.items() if k.startswith("ln_") and k.endswith("_sd") and not k.endswith("mad_sd")]
        med = [v for k, v in nz.items() if k.startswith("ln_") and k.endswith("_median")]
        carry = {
            k.removeprefix("carry_after_"): v
            for k, v in nz.items()
            if k.startswith("carry_after_") and not k.endswith("_se")
        }
        se = [nz[f"carry_after_{e}_se"] for e in carry]
        ratio = max((abs(v) / nz[f"carry_after_{e}_se"] for e, v in carry.items()), default=float("nan"))
        rows.append(
            [
                label,
                len(sd),
                span(100 * np.array(sd), "{:.2f}") + "%",
                span(100 * np.array(med), "{:+.2f}") + "%",
                span(100 * np.array(list(carry.values())), "{:+.2f}") + "%" if carry else "-",
                span(100 * np.array(se), "{:.2f}") + "%" if se else "-",
                f"{ratio:.1f}" if carry else "-",
                ", ".join(f"{e} {100 * v:+.2f}%" for e, v in carry.items() if e.startswith("C")) or "-",
            ]
        )
    return md_table(
        [
            "collection",
            "stock pairs",
            "ln(Bj/Bi) s.d. per round",
            "ln(Bj/Bi) medians",
            "carry-over per engine",
            "its s.e.",
            "largest in s.e.",
            "candidates' carry-over",
        ],
        rows,
    )


def engine_noise() -> str:
    """The engine-noise measurement's table (docs/qualify-runs/engine-noise-h200.json), every row."""
    asks = {"lp": "token logprobs", "lp+top2": "token logprobs + top-2", "none": "nothing"}
    rows = [
        [
            r["preset"],
            r["bs"],
            asks[r["mode"]],
            f"{r['median_ms']:.1f} ms",
            f"{100 * r['mad_rel']:.1f}%",
            f"{r['step_ms']:.2f}",
            f"{r['gpu_util']:.0f}% ({span([p['util'] for p in r['passes']], '{}', '-')})",
        ]
        for r in json.loads((RUNS / "engine-noise-h200.json").read_text())
    ]
    return md_table(
        ["preset", "batch", "asks back", "median pass", "spread (MAD)", "ms per step", "GPU busy: median (per pass)"],
        rows,
    )
