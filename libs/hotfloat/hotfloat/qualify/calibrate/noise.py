"""The raw pass times as tables, and their noise measured directly: no model, no rule.

`series` is the [round, engine] table every analysis of a collection reads; `noise` and `carry_null` are the
per-engine and per-pair spread, the wall time a qualification is built from, and the carry-over check on honest
engines, reported in the calibration record beside the rule's counts (`analyse`).
"""

from __future__ import annotations

import itertools

import numpy as np

from .files import CalibrationRaw


def series(raw: CalibrationRaw, names: list[str]) -> np.ndarray:
    """[round, engine] pass times for the named engines."""
    return np.array([[r.pass_s[n] for n in names] for r in raw.rounds], dtype=float).reshape(
        len(raw.rounds), len(names)
    )


def noise(raws: list[CalibrationRaw]) -> dict[str, float]:
    """Per-engine and per-pair noise of each raw file (keys prefixed `r<k>_` when several are pooled, so engines of
    the same name in different boots stay apart), plus what a qualification's wall time is built from: the slowest
    boot and the round time per engine, the worst over the files."""
    out: dict[str, float] = {}
    per_engine_round, boots = [], []
    for k, raw in enumerate(raws):
        pre = f"r{k}_" if len(raws) > 1 else ""
        names = raw.engines
        x = series(raw, names)
        for j, n in enumerate(names):
            out[f"{pre}pass_cv_{n}"] = float(np.std(x[:, j]) / np.mean(x[:, j]))
            out[f"{pre}pass_median_ms_{n}"] = float(1e3 * np.median(x[:, j]))
        for (i, a), (j, b) in itertools.combinations(enumerate(raw.stock), 2):
            d = np.log(x[:, j] / x[:, i])
            out[f"{pre}ln_{b}_over_{a}_sd"] = float(np.std(d))
            out[f"{pre}ln_{b}_over_{a}_median"] = float(np.median(d))
            out[f"{pre}ln_{b}_over_{a}_mad_sd"] = float(1.4826 * np.median(np.abs(d - np.median(d))))
        t = [r.t for r in raw.rounds]
        if len(t) > 1:
            round_s = float(np.median(np.diff(t)))
            out[f"{pre}round_s"] = round_s
            out[f"{pre}pass_overhead_s"] = float(round_s / len(names) - np.median(x))
            per_engine_round.append(round_s / len(names))
        boots.append(max(raw.boot_s.values()))
        out.update({f"{pre}{key}": v for key, v in carry_null(raw, names, x).items()})
    out["engine_round_s"] = max(per_engine_round, default=0.0)  # a qualification's round serves three engines
    out["boot_s_max"] = max(boots)
    return out


def carry_null(raw: CalibrationRaw, names: list[str], x: np.ndarray) -> dict[str, float]:
    """The carry-over check (`qualify.carryover`) on honest engines: per engine E, the mean log slowdown of a stock
    pass served right after E against a stock pass served after any other engine, and its standard error. These are
    what the check's bound and its three standard errors must stay clear of when nobody cheats."""
    col = {n: j for j, n in enumerate(names)}
    dev = np.log(x) - np.median(np.log(x), axis=0)  # each pass against its engine's median
    out = {}
    for e in names:
        after, other = [], []
        for r, rnd in enumerate(raw.rounds):
            for prev, cur in zip(rnd.order, rnd.order[1:], strict=False):
                if cur in raw.stock and cur != e:
                    (after if prev == e else other).append(dev[r, col[cur]])
        if len(after) >= 3 and len(other) >= 3:
            out[f"carry_after_{e}"] = float(np.mean(after) - np.mean(other))
            out[f"carry_after_{e}_se"] = float(
                np.sqrt(np.var(after, ddof=1) / len(after) + np.var(other, ddof=1) / len(other))
            )
    return out
