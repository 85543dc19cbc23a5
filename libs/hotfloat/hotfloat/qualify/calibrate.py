"""Calibration of the resident-engine rule: raw pass timings from the device, decisions formed here afterwards.

`collect` (on the device, within a wall budget) boots several stock engines (B1, B2, B3, ...) and optionally a
candidate engine C, as resident engines exactly like a qualification's, and serves rounds (one pass per engine, in
a random order per round) until the budget is spent, rewriting the raw JSON after every round so a cut-off run
still leaves its data. Only timings and token agreement are kept, not completions.

`analyse` (anywhere, no device) turns raw files into the rule's error rates:
- false PASS: any three stock engines play B, C and B'. Decisions are formed back to back from disjoint blocks of
  rounds: the sequential rule runs from a round until it decides (or its budget ends), the next decision starts
  on the next round. Each choice of which stock engine plays C gives another series of decisions on the same rounds
  (correlated with the others, so `independent_draws` counts one series);
- power: the stock engine playing C has its measured pass times multiplied by (1 - effect). This injection
  assumes a real speed-up shows as a uniform multiplicative change of pass time with the stock engine's own noise;
  a real kernel could also change the noise or the position bias, which injection cannot show (the measured C,
  when one was booted, is reported next to it);
- a round-bootstrap estimate of the same rates (rounds resampled as if independent), for resolution below what
  the raw rounds allow; it is a model, reported as such.
The analysis grids the rule's parameters and records the most powerful rule at 2% among those meeting every target
(false PASS <= 1% over >= 200 draws, power >= 95% at 2%, <= 10 minutes), else the most powerful of all, flagged.
"""

from __future__ import annotations

import datetime
import itertools
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import Field, ValidationError, model_validator

from ..bundle.bounded import read_file
from ..record import first_error
from .records import EngineSpec, Record, RuleConfig, Workload
from .rule import decide

EFFECTS = (0.01, 0.02, 0.05)
TARGET_FALSE_PASS = 0.01
TARGET_DRAWS = 200
TARGET_POWER = 0.95
TARGET_MINUTES = 10.0
"""The issue's targets: false PASS <= 1% over >= 200 B-vs-B' draws, >= 95% power at 2%, <= 10 minutes."""

PassSeconds = Annotated[float, Field(ge=1e-6, le=86400, allow_inf_nan=False)]
"""A measured pass lasts between a microsecond and a day; a raw file saying otherwise (NaN and infinities included)
was not measured, and the analysis's logarithms and exponentials would leave the floats on it."""


class RawRound(Record):
    t: float
    """Seconds since the first round started."""
    order: list[str]
    pass_s: dict[str, PassSeconds]
    """Engine name -> seconds of its pass (validator clock), the quantity the rule compares."""
    agree: dict[str, float] = {}
    """Engine name -> fraction of requests whose tokens equal the first stock engine's in this round."""
    host: dict[str, dict[str, float]] = {}
    """Engine name -> what the host did during its pass (hotfloat.qualify.hostload): the engine tree's CPU seconds,
    seconds stolen by the hypervisor, the SM clock after the pass. Diagnostics for where slow passes come from."""


class CalibrationRaw(Record):
    """What one device run collected."""

    format: Literal["hotfloat-calibration-raw-v1"] = "hotfloat-calibration-raw-v1"
    started: str
    device: str
    engine: EngineSpec
    engine_identity: str = ""
    engine_info: dict[str, str] = {}
    workload: Workload
    stock: list[str]
    """Names of the stock engines (B1, B2, ...)."""
    candidates: dict[str, str] = {}
    """Candidate engine name (C1, C2, ...) -> identity of the bundle armed in it."""
    boot_s: dict[str, float]
    rounds: list[RawRound] = []
    routed: dict[str, dict[str, int]] = {}
    """Engine name -> seam calls routed to its bundle over its lifetime (reported when it stopped)."""
    kept: list[str] = []
    """Engines whose completions of the first `kept_rounds` rounds are in the outputs file (for evidence)."""
    kept_rounds: int = 0
    failed: dict[str, str] = {}
    """Candidate engines that failed (at boot or in a round) and left the collection, with why."""
    sandboxed: bool
    env: dict = {}
    """hotfloat.env.collect() of the device host."""
    command: str = ""

    @model_validator(mode="after")
    def _complete(self):
        """Every engine the file names has a boot time and a pass time in every round, as `collect` writes them (a
        candidate that fails leaves `candidates` in the round it fails), so the analysis can index them all."""
        names = self.stock + list(self.candidates)
        if len(set(names)) != len(names):
            raise ValueError(f"engine names repeat across stock and candidates: {names}")
        if missing := set(names) - self.boot_s.keys():
            raise ValueError(f"boot_s lacks {sorted(missing)}")
        if unknown := set(self.kept) - set(names):
            raise ValueError(f"kept names engines that are not in the collection: {sorted(unknown)}")
        for i, r in enumerate(self.rounds):
            if missing := set(names) - r.pass_s.keys():
                raise ValueError(f"round {i} has no pass time for {sorted(missing)}")
        return self


class KeptRound(Record):
    """One engine's completions in one round, as a qualification's frame holds them."""

    round: int
    engine: str
    latency_s: list[float]
    tokens: list[list[int]]
    logprobs: list[list[float]]
    margins: list[list[float]]


class RateRow(Record):
    effect: float
    """Injected improvement (0: B against B')."""
    draws: int
    independent_draws: int
    pass_rate: float
    fail_rate: float
    no_decision_rate: float
    mean_rounds: float
    bootstrap_pass_rate: float


class RuleChoice(Record):
    rule: RuleConfig
    rows: list[RateRow]
    minutes: float
    meets_targets: bool


class CalibrationRecord(Record):
    """docs/calibration-h200.json: the rule's measured behaviour on one machine and engine, and the rule chosen."""

    format: Literal["hotfloat-calibration-v1"] = "hotfloat-calibration-v1"
    device: str
    engine: dict[str, str]
    rounds: int
    """Raw rounds analysed (every engine served one pass in each)."""
    draws_b_vs_b: int
    independent_draws: int
    false_pass_rate: float
    false_pass_upper_95: float
    """One-sided 95% Clopper-Pearson upper bound over the independent draws."""
    power_at_1pct: float
    power_at_2pct: float
    power_at_5pct: float
    bootstrap_false_pass: float
    bootstrap_power_at_2pct: float
    minutes_per_qualification: float
    """Concurrent boot of three engines plus the mean rounds of a 2%-better candidate, at the measured round pace."""
    rule: RuleConfig
    noise: dict[str, float]
    """Per-pass relative s.d. per engine, the s.d. and median of ln(B'/B) per stock pair, the round pace."""
    measured_candidate: dict[str, float] = {}
    """Each real candidate booted alongside: its effect against B1 and B2 (the rule's estimator) and its token
    agreement with B1."""
    candidates: list[RuleChoice]
    """Every rule tried, with its rates."""
    meets_targets: bool
    sources: list[str]
    collected_by: list[str] = []
    """The device command that produced each raw file."""
    command: str
    """The analysis command that produced this record."""
    analysed: str


# ----------------------------------------------------------------------------------------------------- collection


def collect(options, out: Path, *, stock: int = 3, candidates: dict | None = None, budget_s: float = 300.0,
            keep_rounds: int = 0, progress: Callable[[str], None] | None = None, command: str = "") -> CalibrationRaw:
    """Boots `stock` stock engines and one engine per candidate bundle (name -> bundle or path), and serves rounds
    until `budget_s` (counted from the start, boots included) would be exceeded; the raw JSON at `out` is rewritten
    after every round. With `keep_rounds`, the completions of B1, B2 and the candidates in the first rounds are
    appended to `<out>.outputs.jsonl`, so a qualification's evidence can be formed from them afterwards
    (`evidence_from`). `options` is a QualifyOptions (engine, workload mix, sandboxing)."""
    from ..bundle import load_bundle
    from .api import _model_dir, environment
    from .presets import PRESETS
    from .host import model_view, staged
    from .resident import EngineFault, ResidentEngine, alone, cpu_sets, harden_self
    from .workload import kv_cap, make_workload, prompts

    t0 = time.monotonic()
    harden_self()
    engine = options.engine()
    workload = make_workload(options.shapes, PRESETS[options.preset]["vocab_size"], passes=1,
                             warmup_passes=options.warmup_passes, seed=options.seed)
    bundles = {n: b if hasattr(b, "identity") else load_bundle(b) for n, b in (candidates or {}).items()}
    names = [f"B{i + 1}" for i in range(stock)] + list(bundles)
    keep = [n for n in names if n in ("B1", "B2") or n in bundles] if keep_rounds else []
    model_dir = _model_dir(engine)
    warmup = [(prompts(workload, -1 - p, b), [r.max_new_tokens for r in batch])
              for p in range(workload.warmup_passes) for b, batch in enumerate(workload.batches)]
    graph_batches = sorted({len(b) for b in workload.batches})
    kv_tokens = kv_cap(workload)
    cpus = cpu_sets(len(names))
    rng = np.random.default_rng(workload.seed)
    outputs = Path(f"{out}.outputs.jsonl")
    outputs.unlink(missing_ok=True)
    engines: dict[str, ResidentEngine] = {}
    with staged(bundles, sandboxed=options.sandboxed) as paths:
        try:
            for i, name in enumerate(names):
                spec = dict(engine.model_dump(), bundle=paths.get(name), identity=bundles[name].identity if name in bundles else None,
                            warmup=warmup, threads=options.threads, extra_passes=0, cpus=cpus[i], graph_batches=graph_batches,
                            kv_tokens=kv_tokens, mem_fraction=options.mem_fraction,
                            model_dir=model_view(model_dir, sandboxed=options.sandboxed))
                engines[name] = ResidentEngine(name, spec, device=engine.device, kind=engine.kind,
                                               sandboxed=options.sandboxed, model_dir=model_dir)
            deadline = t0 + options.startup_timeout_s
            infos, failed = {}, {}

            def drop(name: str, why: str) -> None:
                """A candidate engine that fails leaves the collection (recorded); a stock one ends it."""
                if name not in bundles:
                    raise RuntimeError(f"calibration engine {name} failed: {why}")
                failed[name] = why[:2000]
                names.remove(name)
                if name in keep:
                    keep.remove(name)
                engines.pop(name).close()
                if progress:
                    progress(f"{name} dropped: {why[:300]}")

            for name, e in list(engines.items()):
                try:
                    infos[name] = e.ready(deadline)
                except EngineFault as f:
                    drop(name, f"boot: {f}; {e.log_tail()}")
                    continue
                if progress:
                    progress(f"{name} ready after {e.boot_s:.1f} s")
            idents = {infos[n][0] for n in names}
            if len(idents) != 1:
                raise RuntimeError(f"the engines report different identities: {sorted(i[:12] for i in idents)}")
            env = environment()
            raw = CalibrationRaw(
                started=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                device=env.get("gpu_model") or engine.device, engine=engine, engine_identity=infos["B1"][0],
                engine_info=infos["B1"][1], workload=workload, stock=names[:stock],
                candidates={n: b.identity for n, b in bundles.items() if n in names},
                boot_s={n: e.boot_s for n, e in engines.items()}, kept=list(keep), kept_rounds=keep_rounds,
                failed=failed, sandboxed=options.sandboxed, env=env, command=command)
            rounds: list[RawRound] = []
            t_rounds = time.monotonic()
            r = 0
            while True:
                pace = (time.monotonic() - t_rounds) / r if r else 0.0
                if time.monotonic() - t0 + 1.5 * pace + 30 > budget_s:  # 30 s to stop the engines and write
                    break
                order = [names[k] for k in rng.permutation(len(names))]
                start = time.monotonic() - t_rounds
                batches = [(prompts(workload, r, b), [q.max_new_tokens for q in batch])
                           for b, batch in enumerate(workload.batches)]
                pass_s, done, host = {}, {}, {}
                for name in order:
                    total, got = 0.0, []
                    before = engines[name].reading()
                    try:
                        with alone(list(engines.values()), engines[name]):
                            for ps, mx in batches:
                                s_, outs = engines[name].serve(ps, mx, options.batch_timeout_s)
                                total += s_
                                got += outs
                    except EngineFault as f:
                        drop(f.who if f.who in engines else name, f"round {r}: {f}")
                        continue
                    pass_s[name], done[name], host[name] = total, got, engines[name].reading().since(before)
                if failed.keys() - raw.failed.keys():
                    raw = raw.model_copy(update={"failed": dict(failed), "kept": list(keep),
                                                 "candidates": {n: i for n, i in raw.candidates.items() if n in names}})
                order = [n for n in order if n in names]
                ref = [o["tokens"] for _, o in done["B1"]]
                agree = {n: sum(a == o["tokens"] for a, (_, o) in zip(ref, got)) / len(ref) for n, got in done.items()}
                rounds.append(RawRound(t=start, order=order, pass_s={n: pass_s[n] for n in order}, agree=agree,
                                       host={n: host[n] for n in order}))
                if r < keep_rounds:
                    with outputs.open("a") as f:
                        for n in keep:
                            f.write(KeptRound(round=r, engine=n, latency_s=[x for x, _ in done[n]],
                                              tokens=[o["tokens"] for _, o in done[n]],
                                              logprobs=[_r4(o["logprobs"]) for _, o in done[n]],
                                              margins=[_r4(o["margins"]) for _, o in done[n]]).model_dump_json() + "\n")
                r += 1
                _write(out, raw.model_copy(update={"rounds": rounds}))
                if progress and r % 10 == 0:
                    progress(f"round {r}: " + " ".join(f"{n} {1e3 * pass_s[n]:.1f}ms" for n in names))
            routed = {}
            for n in names:
                try:
                    routed[n] = engines[n].stop(options.batch_timeout_s)[0]
                except EngineFault as f:
                    if progress:
                        progress(f"{n} did not report its seam counts: {f}")
            raw = raw.model_copy(update={"rounds": rounds, "routed": routed})
            _write(out, raw)
            return raw
        finally:
            for e in engines.values():
                e.close()


def _r4(xs: list[float]) -> list[float]:
    """Kept logprobs to 1e-4 (far inside the gate's 0.1 bf16 tolerance): the outputs must come back from the device
    in one small archive. NaN and infinities stay as they are."""
    return [round(x, 4) if math.isfinite(x) else x for x in xs]


RECORD_BYTES = 8 << 20
"""A calibration record is tens of KiB; a larger file is refused before it is parsed."""
RAW_BYTES = 64 << 20
"""A raw collection is well under a MiB per hundred rounds; a larger file is refused before it is parsed."""
OUTPUTS_BYTES = 256 << 20
"""Kept completions: the evidence formed from three of the engines must fit in 32 MiB, so a file of B1, B2 and a
few candidates stays well inside this."""


def _load(path: str | os.PathLike, limit: int, kind: type[Record], what: str):
    """An untrusted JSON file as `kind`; anything else is an InputError naming the file and its first problem."""
    from ..errors import InputError

    try:
        return kind.model_validate_json(read_file(path, limit))
    except ValidationError as e:
        raise InputError(f"{path}: not {what}: {first_error(e)}") from None
    except OSError as e:
        raise InputError(f"{path}: not {what}: {e.strerror or e}") from None
    except ValueError as e:
        raise InputError(f"{path}: not {what}: {e}") from None


def load_rule(path: str | os.PathLike) -> RuleConfig:
    """The rule a calibration record chose, for a service or validator to decide with (`hotfloat serve --rule-from`)."""
    return _load(path, RECORD_BYTES, CalibrationRecord, "a calibration record").rule


def evidence_from(raw: CalibrationRaw, outputs: Path, candidate: str, rule: RuleConfig):
    """A qualification of `candidate` formed from a collection: B1 as B, the candidate as C, B2 as B', over the
    kept rounds (the three were served in a random order within each round, among the collection's other engines).
    The rule's looks are capped to the kept rounds. Returns the Evidence; its decision is `judge`'s."""
    from .decision import judge
    from .records import Evidence, RunFrame

    if candidate not in raw.candidates or candidate not in raw.kept or not {"B1", "B2"} <= set(raw.kept):
        raise ValueError(f"{candidate!r} is not a candidate whose completions were kept (kept: {raw.kept})")
    try:
        text = read_file(outputs, OUTPUTS_BYTES).decode()
    except ValueError as e:
        raise ValueError(f"{outputs}: {e}") from None
    kept: dict[tuple[int, str], KeptRound] = {}
    for i, line in enumerate(text.splitlines()):
        try:
            k = KeptRound.model_validate_json(line)
        except ValidationError as e:
            raise ValueError(f"{outputs} line {i + 1}: {first_error(e)}") from None
        kept[(k.round, k.engine)] = k
    trio = ["B1", candidate, "B2"]
    n = 0
    while n < len(raw.rounds) and all((n, e) in kept for e in trio):
        n += 1
    looks = min(rule.max_looks, n // rule.look_rounds)
    if looks < 1:
        raise ValueError(f"only {n} kept rounds, fewer than one look of {rule.look_rounds}")
    rule = rule.model_copy(update={"max_looks": looks})
    frames = [RunFrame(index=i, role="C" if e == candidate else "B", ok=True,
                       pass_s=[raw.rounds[r].pass_s[e] for r in range(n)],
                       latency_s=[kept[(r, e)].latency_s for r in range(n)], tokens=[kept[(r, e)].tokens for r in range(n)],
                       logprobs=[kept[(r, e)].logprobs for r in range(n)], margins=[kept[(r, e)].margins for r in range(n)],
                       routed=raw.routed.get(e, {}) if e == candidate else {}, boot_s=raw.boot_s[e],
                       tokens_per_s=sum(q.max_new_tokens for b in raw.workload.batches for q in b) * n
                       / sum(raw.rounds[r].pass_s[e] for r in range(n)))
              for i, e in enumerate(trio)]
    order = [[trio.index(e) for e in raw.rounds[r].order if e in trio] for r in range(n)]
    decision = judge(frames, rule, order)
    used = decision.rounds or n
    seconds = max(raw.boot_s[e] for e in trio) + sum(raw.rounds[r].pass_s[e] for r in range(used) for e in trio)
    return Evidence(bundle_identity=raw.candidates[candidate], engine=raw.engine, engine_identity=raw.engine_identity,
                    engine_info=raw.engine_info, workload=raw.workload, order=order, rule=rule, env=raw.env,
                    sandboxed=raw.sandboxed, frames=frames, decision=decision, started=raw.started, seconds=seconds)


def _write(path: Path, raw: CalibrationRaw) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(raw.model_dump_json())
    os.replace(tmp, path)


def load_raw(path: str | os.PathLike) -> CalibrationRaw:
    """A collection's raw JSON, read back as untrusted input (`analyse` and `evidence` run on files from elsewhere)."""
    return _load(path, RAW_BYTES, CalibrationRaw, "a raw calibration collection")


# ------------------------------------------------------------------------------------------------------- analysis


def series(raw: CalibrationRaw, names: list[str]) -> np.ndarray:
    """[round, engine] pass times for the named engines."""
    return np.array([[r.pass_s[n] for n in names] for r in raw.rounds], dtype=float)


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
    """(B, C, B') from distinct stock engines; B and B' play symmetric parts in the rule, so each unordered pair
    counts once per choice of C."""
    out = []
    for c in stock:
        rest = [s for s in stock if s != c]
        out += [(b, c, b2) for b, b2 in itertools.combinations(rest, 2)]
    return out


def rates(raws: list[CalibrationRaw], rule: RuleConfig, effect: float, boot_draws: int, seed: int) -> RateRow:
    """The rule's outcome rates with `effect` injected into the engine playing C (0: the false PASS rate)."""
    results, first = [], []
    boot_pass = boot_n = 0
    rng = np.random.default_rng(seed)
    for raw in raws:
        for k, (b, c, b2) in enumerate(assignments(raw.stock)):
            x = series(raw, [b, c, b2])
            got = walk(x[:, 0], x[:, 1] * (1 - effect), x[:, 2], rule)
            results += got
            if k == 0:
                first += got
        x_all = series(raw, raw.stock)
        per = max(1, boot_draws // len(raws))
        for _ in range(per):
            idx = rng.integers(0, len(x_all), size=rule.max_rounds)
            pick = rng.choice(len(raw.stock), size=3, replace=False)
            x = x_all[idx][:, pick]
            lk = decide(x[:, 0], x[:, 1] * (1 - effect), x[:, 2], rule)
            boot_pass += lk is not None and lk.status == "PASS"
            boot_n += 1
    n = len(results)
    count = lambda s: sum(st == s for st, _ in results) / n if n else float("nan")  # noqa: E731
    return RateRow(effect=effect, draws=n, independent_draws=len(first), pass_rate=count("PASS"),
                   fail_rate=count("FAIL"), no_decision_rate=count("NO_DECISION"),
                   mean_rounds=float(np.mean([k for _, k in results])) if n else float("nan"),
                   bootstrap_pass_rate=boot_pass / boot_n if boot_n else float("nan"))


def clopper_pearson_upper(k: int, n: int, level: float = 0.95) -> float:
    """One-sided upper confidence bound of a binomial rate (k successes in n)."""
    if n == 0:
        return 1.0
    if k >= n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        cdf = sum(math.comb(n, i) * mid**i * (1 - mid) ** (n - i) for i in range(k + 1))
        lo, hi = (mid, hi) if cdf > 1 - level else (lo, mid)
    return hi


def noise(raws: list[CalibrationRaw]) -> dict[str, float]:
    """Per-engine and per-pair noise of each raw file (keys prefixed `r<k>_` when several are pooled, so engines of
    the same name in different boots stay apart), plus what a qualification's wall time is built from: the slowest
    boot and the round time per engine, the worst over the files."""
    out: dict[str, float] = {}
    per_engine_round, boots = [], []
    for k, raw in enumerate(raws):
        pre = f"r{k}_" if len(raws) > 1 else ""
        names = raw.stock + list(raw.candidates)
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
        out.update({f"{pre}{key}": v for key, v in stall_signs(raw, names, x).items()})
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
            for prev, cur in zip(rnd.order, rnd.order[1:]):
                if cur in raw.stock and cur != e:
                    (after if prev == e else other).append(dev[r, col[cur]])
        if len(after) >= 3 and len(other) >= 3:
            out[f"carry_after_{e}"] = float(np.mean(after) - np.mean(other))
            out[f"carry_after_{e}_se"] = float(np.sqrt(np.var(after, ddof=1) / len(after)
                                                       + np.var(other, ddof=1) / len(other)))
    return out


def stall_signs(raw: CalibrationRaw, names: list[str], x: np.ndarray) -> dict[str, float]:
    """How slow passes line up with the host readings (RawRound.host): the share of passes 10% over their engine's
    median, and the correlation of excess pass time with the engine tree's CPU seconds and with stolen time."""
    if not raw.rounds or not all(n in r.host for r in raw.rounds for n in names):
        return {}
    excess = (x / np.median(x, axis=0) - 1).ravel()
    cpu = np.array([[r.host[n]["cpu_s"] for n in names] for r in raw.rounds]).ravel()
    steal = np.array([[r.host[n]["steal_s"] for n in names] for r in raw.rounds]).ravel()
    mhz = np.array([[r.host[n]["sm_mhz"] for n in names] for r in raw.rounds]).ravel()
    corr = lambda a: float(np.corrcoef(excess, a)[0, 1]) if np.std(a) > 0 and np.std(excess) > 0 else 0.0  # noqa: E731
    return {"stall_share": float(np.mean(excess > 0.1)), "stall_corr_engine_cpu": corr(cpu),
            "stall_corr_steal": corr(steal), "steal_s_per_pass": float(np.mean(steal)),
            "sm_mhz_min": float(mhz.min()), "sm_mhz_median": float(np.median(mhz))}


def measured_candidate(raws: list[CalibrationRaw], trim: float) -> dict[str, float]:
    """Each real candidate's effect against B1 and B2 over all rounds (the rule's estimator), and its agreement."""
    from .rule import trimmed_mean

    out = {}
    for raw in raws:
        for name in raw.candidates:
            x = series(raw, [raw.stock[0], name, raw.stock[1]])
            e = (np.log(x[:, 0]) + np.log(x[:, 2])) / 2 - np.log(x[:, 1])
            out[f"{name}_improvement"] = float(-math.expm1(-trimmed_mean(e, trim)))
            out[f"{name}_token_agreement"] = float(np.mean([r.agree.get(name, float("nan")) for r in raw.rounds]))
    return out


def analyse(raws: list[CalibrationRaw], grid: list[RuleConfig], *, boot_draws: int = 1000, seed: int = 0,
            sources: list[str] = (), command: str = "") -> CalibrationRecord:
    """Every rule in `grid` on the raw rounds; the record names the chosen one: among the rules meeting every target
    the most powerful at 2%, else (`meets_targets` false) the best of all by `_rank`."""
    if not raws or any(len(r.stock) < 3 or len(r.rounds) < 3 for r in raws):
        raise ValueError("calibration needs at least three stock engines and three rounds per raw file")
    nz = noise(raws)
    round3 = nz["engine_round_s"] * 3
    choices = []
    for rule in grid:
        rows = [rates(raws, rule, e, boot_draws, seed) for e in (0.0, *EFFECTS)]
        two = rows[2]
        minutes = (nz["boot_s_max"] + (two.mean_rounds if two.draws else rule.max_rounds) * round3) / 60
        meets = _shown(rows, minutes) and rows[0].draws >= TARGET_DRAWS
        choices.append(RuleChoice(rule=rule, rows=rows, minutes=minutes, meets_targets=meets))
    ok = [c for c in choices if c.meets_targets] or choices
    best = max(ok, key=_rank)
    null = best.rows[0]
    k_ind = round(null.pass_rate * null.independent_draws) if null.draws else 0
    info = dict(raws[0].engine_info)
    return CalibrationRecord(
        device=raws[0].device, engine=info, rounds=sum(len(r.rounds) for r in raws), draws_b_vs_b=null.draws,
        independent_draws=null.independent_draws, false_pass_rate=null.pass_rate,
        false_pass_upper_95=clopper_pearson_upper(k_ind, null.independent_draws),
        power_at_1pct=best.rows[1].pass_rate, power_at_2pct=best.rows[2].pass_rate, power_at_5pct=best.rows[3].pass_rate,
        bootstrap_false_pass=null.bootstrap_pass_rate, bootstrap_power_at_2pct=best.rows[2].bootstrap_pass_rate,
        minutes_per_qualification=best.minutes, rule=best.rule, noise=nz,
        measured_candidate=measured_candidate(raws, best.rule.trim), candidates=choices,
        meets_targets=best.meets_targets, sources=list(sources), collected_by=[r.command for r in raws], command=command,
        analysed=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"))


def _rank(c: RuleChoice) -> tuple:
    """Order of preference: every target met that the collection can show (all but the number of draws), then power
    at 2%, then the most null draws behind the false PASS rate (a rule that decides late has few), then the larger
    process floor (a persistent offset between processes, which the rounds cannot average, is bounded by it), then
    the bootstrap's power (a model), then speed."""
    null, two = c.rows[0], c.rows[2]
    return (_shown(c.rows, c.minutes), _nz(two.pass_rate), null.draws, c.rule.process_floor,
            _nz(two.bootstrap_pass_rate), -c.minutes)


def _shown(rows: list[RateRow], minutes: float) -> bool:
    """Every target but the number of null draws: false PASS (measured and bootstrap), power at 2%, minutes."""
    null, two = rows[0], rows[2]
    return (null.draws > 0 and null.pass_rate <= TARGET_FALSE_PASS and null.bootstrap_pass_rate <= TARGET_FALSE_PASS
            and two.pass_rate >= TARGET_POWER and minutes <= TARGET_MINUTES)


def _nz(v: float) -> float:
    return -1.0 if math.isnan(v) else v


def default_grid(logprob_tol: float) -> list[RuleConfig]:
    """Rules tried by default: looks of 5, 10 or 20 rounds, 2 to 6 looks, process floors from 0.1% to 0.5%."""
    return [RuleConfig(look_rounds=lr, max_looks=ml, process_floor=pf, logprob_tol=logprob_tol)
            for lr in (5, 10, 20) for ml in (2, 4, 6) for pf in (0.001, 0.002, 0.003, 0.005)]
