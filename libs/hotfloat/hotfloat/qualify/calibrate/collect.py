"""Calibration collection on the device: one boot of resident engines, pass times round by round.

Stock engines B1, B2, ..., handicapped stock engines H1, H2, ... (after every activation.silu_and_mul call the
validator adds a GPU delay, so a stock C is truly faster than them by a known amount: the positive control) and
candidate engines C1, C2, ... boot together, exactly as a qualification's; rounds (one pass per engine, in a random
order per round, each timed alone under the qualification's isolation) are served until the wall budget or round cap,
and the raw JSON is rewritten after every round so a cut-off run still leaves its data. Only timings and token
agreement are kept, not completions (except the kept rounds, for `evidence_from`).
"""

from __future__ import annotations

import datetime
import math
import os
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from .files import CalibrationRaw, RawRound
from .evidence import KeptRound
from ..fleet import Counts, Fleet, Ready, Served
from ..host import staged
from ..options import for_slots
from ...engine.presets import PRESETS
from ..records import Workload
from ..isolation.resident import cpu_sets, harden_self
from ..workload import make_workload


def handicap_us(effect: float, pass_s: float, layers: int, workload: Workload) -> float:
    """GPU delay per activation.silu_and_mul call that makes a stock pass of `pass_s` slow enough for a stock C to
    save `effect` of it (the rule's measure): pass_s x effect / (1 - effect), spread over one call per layer per
    forward step, one step per new token of each batch's longest request (a chunked prefill adds a few steps, which
    the analysis sees as a realised effect slightly above the nominal one)."""
    steps = sum(max(r.max_new_tokens for r in batch) for batch in workload.batches)
    return 1e6 * pass_s * effect / (1 - effect) / (layers * steps)


def collect(
    options,
    out: Path,
    *,
    stock: int = 3,
    handicap: dict[float, int] | None = None,
    handicap_pass_s: float = 1.3,
    candidates: dict | None = None,
    budget_s: float = 300.0,
    max_rounds: int | None = None,
    keep_rounds: int = 0,
    export_cache: Path | None = None,
    progress: Callable[[str], None] | None = None,
    command: str = "",
) -> CalibrationRaw:
    """Boots `stock` stock engines, `count` handicapped ones per effect in `handicap` (sized against a stock pass of
    `handicap_pass_s`) and one engine per candidate bundle (name -> bundle or path), and serves rounds until
    `budget_s` (counted from the start, boots included) would be exceeded or `max_rounds` are served. With
    `keep_rounds`, the completions of B1, B2 and the candidates in the first rounds are appended to
    `<out>.outputs.jsonl` (`evidence_from`). With `export_cache`, B1's JIT caches are copied there after the rounds
    (`export`). `options` is a QualifyOptions (engine, workload mix, sandboxing)."""
    from ...bundle import load_bundle
    from ...env import collect as environment

    t0 = time.monotonic()
    say = progress or (lambda m: None)
    harden_self()
    bundles = {n: b if hasattr(b, "identity") else load_bundle(b) for n, b in (candidates or {}).items()}
    options = for_slots(options, {op.entry.slot for b in bundles.values() for op in b.ops})
    engine = options.engine()
    workload = make_workload(
        options.shapes,
        PRESETS[options.preset]["vocab_size"],
        passes=1,
        warmup_passes=options.warmup_passes,
        seed=options.seed,
    )
    handicapped = {f"H{i + 1}": e for i, e in enumerate(e for e, k in (handicap or {}).items() for _ in range(k))}
    delay = {
        n: handicap_us(e, handicap_pass_s, PRESETS[options.preset]["num_hidden_layers"], workload)
        for n, e in handicapped.items()
    }
    names = [f"B{i + 1}" for i in range(stock)] + list(handicapped) + list(bundles)
    keep = [n for n in names if n in ("B1", "B2") or n in bundles] if keep_rounds else []
    rng = np.random.default_rng(workload.seed)
    outputs = Path(f"{out}.outputs.jsonl")
    outputs.unlink(missing_ok=True)
    failed: dict[str, str] = {}
    with (
        staged(bundles, sandboxed=options.sandboxed) as paths,
        Fleet(engine, workload, options, readings=True) as fleet,
    ):

        def drop(name: str, why: str) -> bool:
            """A candidate engine that fails leaves the collection (recorded); a stock or handicapped one ends it."""
            if name not in bundles:
                raise RuntimeError(f"calibration engine {name} failed: {why}")
            failed[name] = why[:2000]
            names.remove(name)
            if name in keep:
                keep.remove(name)
            if name in fleet.engines:
                fleet.drop(name)
            say(f"{name} dropped: {why[:300]}")
            return True

        arms = {
            n: {
                "bundle": paths.get(n),
                "identity": bundles[n].identity if n in bundles else None,
                "handicap_us": delay.get(n, 0.0),
            }
            for n in names
        }
        plan = fleet.plan_memory(wanted=len(names), least=len(names))
        if plan is not None:
            say(f"memory: {plan.resident} engines of {plan.share_bytes / (1 << 30):.1f} GiB each on {plan.device}")
        cpus = dict(zip(names, cpu_sets(len(names)), strict=True))
        booted: dict = {}
        for group in ([n for n in names if n not in bundles], [n for n in names if n in bundles]):
            if group:  # stock engines first: a candidate's boot cannot take their memory
                got = fleet.boot(
                    {n: arms[n] for n in group}, [cpus[n] for n in group], time.monotonic() + options.startup_timeout_s
                )
                booted.update(got)
        for name, got in booted.items():
            if isinstance(got, Ready):
                say(f"{name} ready after {got.boot_s:.1f} s")
            else:
                drop(name, f"{got}; {fleet[name].log_tail()}" if name in fleet.engines else str(got))
        idents = {booted[n].identity for n in names}
        if len(idents) != 1:
            raise RuntimeError(f"the engines report different identities: {sorted(i[:12] for i in idents)}")
        env = environment()
        raw = CalibrationRaw(
            started=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            device=env.gpu_model or engine.device,
            engine=engine,
            engine_identity=booted["B1"].identity,
            engine_info=booted["B1"].info,
            workload=workload,
            stock=names[:stock],
            handicap=handicapped,
            handicap_us=delay,
            candidates={n: b.identity for n, b in bundles.items() if n in names},
            boot_s={n: booted[n].boot_s for n in names},
            kept=list(keep),
            kept_rounds=keep_rounds,
            failed=failed,
            sandboxed=options.sandboxed,
            env=env,
            command=command,
        )
        rounds: list[RawRound] = []
        t_rounds = time.monotonic()
        r = 0
        while max_rounds is None or r < max_rounds:
            pace = (time.monotonic() - t_rounds) / r if r else 0.0
            if time.monotonic() - t0 + 1.5 * pace + 30 > budget_s:  # 30 s to stop the engines and write
                break
            order = [names[k] for k in rng.permutation(len(names))]
            start = time.monotonic() - t_rounds
            served = fleet.round(r, order, lambda name, f, r=r: drop(name, f"round {r}: {f}"))
            if failed.keys() - raw.failed.keys():
                raw = raw.model_copy(
                    update={
                        "failed": dict(failed),
                        "kept": list(keep),
                        "candidates": {n: i for n, i in raw.candidates.items() if n in names},
                    }
                )
            order = [n for n in order if n in names]
            ref = [o["tokens"] for o in served["B1"].outputs]
            agree = {
                n: sum(a == o["tokens"] for a, o in zip(ref, s.outputs, strict=True)) / len(ref)
                for n, s in served.items()
            }
            rounds.append(
                RawRound(
                    t=start,
                    order=order,
                    pass_s={n: served[n].seconds for n in order},
                    agree=agree,
                    host={n: served[n].host for n in order},
                )
            )
            if r < keep_rounds:
                with outputs.open("a") as f:
                    f.writelines(_kept(r, n, served[n]).model_dump_json() + "\n" for n in keep)
            r += 1
            _write(out, raw.model_copy(update={"rounds": rounds}))
            if r % 10 == 0:
                say(f"round {r}: " + " ".join(f"{n} {1e3 * served[n].seconds:.1f}ms" for n in names))
        if export_cache is not None:
            say(fleet.warm_caches("B1", Path(export_cache)))
        routed = {}
        for n, got in fleet.stop(names, options.batch_timeout_s).items():
            if isinstance(got, Counts):
                routed[n] = got.routed
            else:
                say(f"{n} did not report its seam counts: {got}")
        raw = raw.model_copy(
            update={"rounds": rounds, "routed": routed, "isolation": fleet.isolation(), "memory": fleet.memory()}
        )
        _write(out, raw)
        return raw


def _kept(r: int, name: str, served: Served) -> KeptRound:
    """One engine's completions of round r as the outputs file keeps them (for `evidence_from`)."""
    outs = served.outputs
    return KeptRound(
        round=r,
        engine=name,
        latency_s=served.latency_s,
        tokens=[o["tokens"] for o in outs],
        logprobs=[_r4(o["logprobs"]) for o in outs],
        margins=[_r4(o["margins"]) for o in outs],
    )


def _r4(xs: list[float]) -> list[float]:
    """Kept logprobs to 1e-4 (far inside the gate's 0.1 bf16 tolerance): the outputs must come back from the device
    in one small archive. NaN and infinities stay as they are."""
    return [round(x, 4) if math.isfinite(x) else x for x in xs]


def _write(path: Path, raw: CalibrationRaw) -> None:
    tmp = Path(f"{path}.tmp")
    tmp.write_text(raw.model_dump_json())
    os.replace(tmp, path)
