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
keeps the stock engine's noise); and a hierarchical model of the stock engines' log pass times, round effect +
persistent process offset (s.d. tau) + per-pass noise (s.d. sigma), fitted by the method of moments on each boot's
two-way round x process layout (ANOVA mean squares pooled over boots), and again on the layouts with each far pass
winsorized (`calibrate_robust`: one pass must not set it), under which the rule is simulated. The rule is not
chosen here: it is pre-registered, and units from the collections it was fixed on are also reported apart.
"""

from __future__ import annotations

import datetime
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .calibrate import (
    TARGET_CONTROLS,
    TARGET_FALSE_PASS,
    TARGET_MINUTES,
    TARGET_POWER,
    CalibrationRaw,
    CalibrationRecord,
    Preregistration,
    ProcessModel,
    Rates,
    RobustModel,
    Unit,
    clopper_pearson_upper,
)
from .calibrate_robust import CUT, winsorize
from .records import RuleConfig
from .rule import decide, trimmed_mean

EFFECTS = (0.01, 0.02, 0.05)
Z95 = 1.6449
"""One-sided 95% normal quantile (tau's upper bound, through the Wilson-Hilferty chi-square approximation)."""
ANOVA = (
    "two-way round x process ANOVA of the stock engines' log pass times per boot, mean squares pooled over boots; "
    "tau's bound by the chi-square (Wilson-Hilferty) quantile"
)
WAVE_ENGINES = 6
"""Six 8B engines of about 22 GB fit one H200: two disjoint null triples per boot."""


def series(raw: CalibrationRaw, names: list[str]) -> np.ndarray:
    """[round, engine] pass times for the named engines."""
    return np.array([[r.pass_s[n] for n in names] for r in raw.rounds], dtype=float).reshape(
        len(raw.rounds), len(names)
    )


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


@dataclass(frozen=True)
class Fit:
    """The hierarchical model fitted to the stock engines' log pass times."""

    sigma: float
    tau: float
    """The moment estimate of the process offsets' s.d., truncated at 0."""
    tau_upper: float
    resid: np.ndarray
    """The residuals, scaled up for the fit's degrees of freedom, for resampling. The robust fit's are its raw ones,
    far passes as they were: those are part of what the rule meets; only sigma and tau are estimated without them."""
    processes: int
    passes: int
    cut: float | None = None
    """The robust fit's bound in robust s.d. (None: the moment fit)."""
    winsorized: int = 0


def fit(raws: list[CalibrationRaw], cut: float | None = None) -> Fit:
    """The hierarchical model on the stock engines' log pass times: sigma, tau and tau's upper 95% bound. Per boot, the
    round means are removed (they cancel in the rule's ratios) and E[SS between processes] = (J - 1)(sigma^2 +
    R tau^2) against the residual mean square sigma^2. With `cut`, the robust fit: the same equations on each boot's
    table winsorized at `cut` robust s.d. (`calibrate_robust.winsorize`)."""
    sse = dfe = ssg = dfg = w = 0.0
    resid, procs, passes, pulled = [], 0, 0, 0
    for raw in (r for r in raws if len(r.stock) > 1):
        logs = np.log(series(raw, raw.stock))
        z, n = winsorize(logs, cut) if cut else (logs, 0)
        off, pulled = logs - z, pulled + n  # what winsorizing took off each pass, put back into the resampled residuals
        z = z - z.mean(axis=1, keepdims=True)
        n_r, n_j = z.shape
        m = z.mean(axis=0)
        e = z - m
        sse, dfe, ssg, dfg = sse + (e**2).sum(), dfe + (n_r - 1) * (n_j - 1), ssg + n_r * (m**2).sum(), dfg + n_j - 1
        w, procs, passes = w + (n_j - 1) * n_r, procs + n_j, passes + n_r * n_j
        resid.append((e + off).ravel() * math.sqrt(n_r * n_j / ((n_r - 1) * (n_j - 1))))
    s2 = sse / dfe
    q = dfg * (1 - 2 / (9 * dfg) - Z95 * math.sqrt(2 / (9 * dfg))) ** 3  # 5% quantile of chi-square(dfg)
    tau, upper = (math.sqrt(max(0.0, v)) for v in ((ssg - dfg * s2) / w, (ssg / q - s2) * dfg / w))
    return Fit(math.sqrt(s2), tau, upper, np.concatenate(resid), procs, passes, cut, pulled)


def simulate(resid: np.ndarray, tau: float, rule: RuleConfig, effect: float, sims: int, rng) -> float:
    """The rule's PASS rate on simulated qualifications: three process offsets drawn at tau, per-pass noise
    resampled from the fitted residuals, C faster by `effect`."""
    passes = 0
    for _ in range(sims):
        x = np.exp(rng.normal(0.0, tau, 3) + rng.choice(resid, size=(rule.max_rounds, 3)))
        lk = decide(x[:, 0], x[:, 1] * (1 - effect), x[:, 2], rule)
        passes += lk is not None and lk.status == "PASS"
    return passes / sims if sims else float("nan")


def process_model(f: Fit, rule: RuleConfig, sims: int, seed: int) -> ProcessModel:
    """A fit and the rule simulated under it; each fit starts its own generator at `seed`, so the moment and robust
    models meet the same random stream and differ by their fits alone."""
    rng = np.random.default_rng(seed)
    common = dict(
        processes=f.processes,
        passes=f.passes,
        sigma=f.sigma,
        tau=f.tau,
        tau_upper_95=f.tau_upper,
        sims=sims,
        false_pass=simulate(f.resid, f.tau, rule, 0.0, sims, rng),
        false_pass_at_tau_upper=simulate(f.resid, f.tau_upper, rule, 0.0, sims, rng),
        power_at_2pct=simulate(f.resid, f.tau_upper, rule, 0.02, sims, rng),
    )
    if f.cut is None:
        return ProcessModel(method=f"method of moments: {ANOVA}", **common)
    return RobustModel(
        method=f"method of moments on each boot's table winsorized at {f.cut:g} robust s.d. (Huber "
        f"fit, MAD scale; raw residuals resampled): {ANOVA}",
        cut=f.cut,
        winsorized=f.winsorized,
        **common,
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
    rule = prereg.rule
    sources = list(sources) or [f"raw{k}" for k in range(len(raws))]
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
    wave_s = (
        float(np.median([max(r.boot_s.values()) for r in raws]))
        + rule.max_rounds * WAVE_ENGINES * nz["engine_round_s"]
        + 30
    )
    waves = math.ceil(max(0, need - n) / (WAVE_ENGINES // 3))
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
            units_per_wave=WAVE_ENGINES // 3,
            wave_minutes=wave_s / 60,
            waves=waves,
            device_hours=waves * wave_s / 3600,
        ),
        sources=sources,
        collected_by=[r.command for r in raws],
        command=command,
        analysed=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    )
