"""Calibration analysis (anywhere, no device): raw collections in, the rule's error rates out, on independent units.

The unit is a set of processes. Within one boot (a raw file) the stock engines are cut into disjoint triples in the
order they were named (B1-B3, B4-B6, ...), each one null qualification exactly as a real one runs: B, C, B' in that
order, the rule from the first round until it decides. No two units share a process, so their persistent offsets
are independent draws: `independent_draws` counts them, `false_passes_independent` the PASSes among them, and
`false_pass_upper_95` is the one-sided Clopper-Pearson bound of exactly those two numbers. Handicapped engines pair
up by effect (H1 with H2, ...) as B and B' around a stock C kept out of the triples (the last stock engines): the
positive controls, a real engine truly faster by a known amount.

Secondary, and labelled so: every role permutation over back-to-back blocks of rounds (`pooled_*`, sharing processes
and rounds); the null units with C's pass times scaled by (1 - effect) (`injected`, which assumes a faster kernel
keeps the stock engine's noise); and the hierarchical process model, by moments and robust (`model`), under
which the rule is simulated. The rule is not chosen here: it is pre-registered, and units from the collections it
was fixed on are also reported apart.
"""

from __future__ import annotations

import datetime
import itertools
import math
from pathlib import Path

import numpy as np

from .files import (
    TARGET_CONTROLS,
    TARGET_FALSE_PASS,
    TARGET_MINUTES,
    TARGET_POWER,
    CalibrationRaw,
    CalibrationRecord,
    Preregistration,
    Rates,
    Unit,
    clopper_pearson_upper,
)
from ...env.source import source_digest
from .model import fit, process_model
from .noise import noise, series
from .robust import CUT
from ..records import RuleConfig
from ..rule import decide, trimmed_mean

EFFECTS = (0.01, 0.02, 0.05)


def wave_engines(raws: list[CalibrationRaw]) -> int:
    """Stock engines per boot of the device's collections (the memory plan's: six 8B engines on the H200, three on
    the H100), in disjoint null triples: what one more wave yields."""
    return max(3, max((len(r.stock) for r in raws), default=3) // 3 * 3)


def gain(x: np.ndarray, trim: float = 0.5) -> float:
    """C's gain over B and B' ([round, (B, C, B')] pass times) by the rule's estimator, as a fraction of B's time."""
    e = (np.log(x[:, 0]) + np.log(x[:, 2])) / 2 - np.log(x[:, 1])
    return float(-math.expm1(-trimmed_mean(e, trim)))


def units(raw: CalibrationRaw, rule: RuleConfig, source: int) -> list[Unit]:
    """The boot's independent qualifications: disjoint null triples, then one positive control per handicapped pair."""
    by_effect: dict[float, list[str]] = {}
    for n, e in raw.handicap.items():
        by_effect.setdefault(e, []).append(n)
    pairs = [(e, g[i], g[i + 1]) for e, g in by_effect.items() for i in range(0, len(g) - 1, 2)]
    free = raw.stock[: len(raw.stock) - min(len(pairs), len(raw.stock))]
    trios = [("null", 0.0, free[i : i + 3]) for i in range(0, len(free) - 2, 3)]
    trios += [("positive", e, [a, c, b]) for (e, a, b), c in zip(pairs, raw.stock[len(free) :], strict=False)]
    out = []
    for kind, effect, names in trios:
        x = series(raw, names)
        lk = decide(x[:, 0], x[:, 1], x[:, 2], rule)
        out.append(
            Unit(
                source=source,
                kind=kind,
                effect=effect,
                engines=names,
                status=lk.status if lk else None,
                rounds=lk.rounds if lk else len(x),
                measured=gain(x),
            )
        )
    return out


def rates(effect: float, got: list[tuple[str | None, int]], realised: float | None = None) -> Rates:
    """Counts of decided qualifications (status, rounds); undecided ones (None) are left out."""
    got = [(s, k) for s, k in got if s is not None]
    return Rates(
        effect=effect,
        qualifications=len(got),
        passes=sum(s == "PASS" for s, _ in got),
        fails=sum(s == "FAIL" for s, _ in got),
        mean_rounds=float(np.mean([k for _, k in got])) if got else 0.0,
        realised_effect=realised,
    )


def walk(b: np.ndarray, c: np.ndarray, b2: np.ndarray, rule: RuleConfig) -> list[tuple[str, int]]:
    """Back-to-back qualifications over the rounds: each runs the sequential rule from where the last one stopped;
    an unfinished tail (undecided, budget not spent) is dropped. Returns (status, rounds used) per decision."""
    out, s, n = [], 0, len(b)
    while s < n:
        lk = decide(b[s:], c[s:], b2[s:], rule)
        if lk is None:
            break
        out.append((lk.status, lk.rounds))
        s += lk.rounds
    return out


def assignments(stock: list[str]) -> list[tuple[str, str, str]]:
    """(B, C, B') from distinct stock engines; B and B' play symmetric parts, so each pair counts once per C."""
    return [(b, c, b2) for c in stock for b, b2 in itertools.combinations([s for s in stock if s != c], 2)]


def measured_candidate(raws: list[CalibrationRaw], trim: float) -> dict[str, float]:
    """Each real candidate's effect against B1 and B2 over all rounds (the rule's estimator), and its agreement."""
    out = {}
    for raw in raws:
        for name in raw.candidates if len(raw.stock) > 1 else ():
            out[f"{name}_improvement"] = gain(series(raw, [raw.stock[0], name, raw.stock[1]]), trim)
            out[f"{name}_token_agreement"] = float(np.mean([r.agree.get(name, float("nan")) for r in raw.rounds]))
    return out


def analyse(
    raws: list[CalibrationRaw],
    prereg: Preregistration,
    *,
    sims: int = 10000,
    seed: int = 0,
    sources: list[str] = (),
    command: str = "",
) -> CalibrationRecord:
    """The pre-registered rule on the raw rounds: counted on independent units first, then the secondary figures."""
    if not raws or any(not r.stock or len(r.rounds) < 3 for r in raws) or not any(len(r.stock) > 1 for r in raws):
        raise ValueError(
            "calibration needs a stock engine and three rounds in every raw file, and two stock engines in one"
        )
    sources = list(sources) or [f"raw{k}" for k in range(len(raws))]
    if off := next((k for k, r in enumerate(raws) if r.engine_info != raws[0].engine_info), None):
        keys = sorted(
            k
            for k in {*raws[0].engine_info, *raws[off].engine_info}
            if raws[0].engine_info.get(k) != raws[off].engine_info.get(k)
        )
        raise ValueError(
            f"{sources[off]} ran another engine configuration than {sources[0]} ({', '.join(keys)} differ): "
            "a record belongs to one configuration"
        )
    rule = prereg.rule
    every = [u for k, raw in enumerate(raws) for u in units(raw, rule, k)]
    null = [u for u in every if u.kind == "null" and u.status is not None]
    held = [u for u in null if Path(sources[u.source]).name not in prereg.selected_on]
    k, n, k_held = sum(u.status == "PASS" for u in null), len(null), sum(u.status == "PASS" for u in held)
    positive = [u for u in every if u.kind == "positive"]
    controls = [
        rates(
            e,
            [(u.status, u.rounds) for u in positive if u.effect == e],
            float(np.mean([u.measured for u in positive if u.effect == e])),
        )
        for e in sorted({u.effect for u in positive})
    ]
    injected = []
    for e in EFFECTS:
        got = []
        for u in null:
            x = series(raws[u.source], u.engines)
            lk = decide(x[:, 0], x[:, 1] * (1 - e), x[:, 2], rule)
            got.append((lk.status if lk else None, lk.rounds if lk else 0))
        injected.append(rates(e, got))
    pooled = [
        s for raw in raws for b, c, b2 in assignments(raw.stock) for s, _ in walk(*series(raw, [b, c, b2]).T, rule)
    ]
    model, robust = process_model(fit(raws), rule, sims, seed), process_model(fit(raws, CUT), rule, sims, seed)
    nz = noise(raws)
    two = next((r for r in controls if r.effect == 0.02 and r.qualifications), injected[1])
    minutes = (nz["boot_s_max"] + (two.mean_rounds or rule.max_rounds) * 3 * nz["engine_round_s"]) / 60
    upper = clopper_pearson_upper(k, n)
    need = math.ceil(math.log(0.05) / math.log(1 - TARGET_FALSE_PASS))
    per_wave = wave_engines(raws)
    wave_s = (
        float(np.median([max(r.boot_s.values()) for r in raws]))
        + rule.max_rounds * per_wave * nz["engine_round_s"]
        + 30
    )
    waves = math.ceil(max(0, need - n) / (per_wave // 3))
    short = []
    if upper > TARGET_FALSE_PASS:
        short.append(
            f"false PASS: {k} of {n} independent null qualifications, upper 95% bound {upper:.1%} > "
            f"{TARGET_FALSE_PASS:.0%} (at no false PASS that takes {need})"
        )
    pc2 = next((r for r in controls if r.effect == 0.02), None)
    if pc2 is None or pc2.qualifications < TARGET_CONTROLS:
        short.append(
            f"power: {pc2.qualifications if pc2 else 0} real positive controls at 2%, fewer than {TARGET_CONTROLS}"
        )
    elif pc2.passes < TARGET_POWER * pc2.qualifications:
        short.append(
            f"power: {pc2.passes} of {pc2.qualifications} positive controls at 2% passed, under {TARGET_POWER:.0%}"
        )
    if minutes > TARGET_MINUTES:
        short.append(f"time: {minutes:.1f} minutes per qualification > {TARGET_MINUTES:.0f}")
    return CalibrationRecord(
        device=raws[0].device,
        engine=dict(raws[0].engine_info),
        rounds=sum(len(r.rounds) for r in raws),
        independent_draws=n,
        false_passes_independent=k,
        false_pass_upper_95=upper,
        held_out_draws=len(held),
        held_out_false_passes=k_held,
        held_out_upper_95=clopper_pearson_upper(k_held, len(held)),
        pooled_draws=len(pooled),
        pooled_false_passes=pooled.count("PASS"),
        positive_control=controls,
        injected=injected,
        model=model,
        robust_model=robust,
        units=every,
        minutes_per_qualification=minutes,
        preregistration=prereg,
        rule=rule,
        noise=nz,
        measured_candidate=measured_candidate(raws, rule.trim),
        meets_targets=not short,
        shortfall=short,
        path_to_300=dict(
            units_needed=need,
            units_now=n,
            units_per_wave=per_wave // 3,
            wave_minutes=wave_s / 60,
            waves=waves,
            device_hours=waves * wave_s / 3600,
        ),
        sources=sources,
        collected_by=[r.command for r in raws],
        command=command,
        analysed=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        source=source_digest(),
    )
