"""Every number the docs quote about the committed H200 calibration and ladder files, regenerated from those files.

    python tools/calibration_tables.py            # rewrite the generated blocks of the docs
    python tools/calibration_tables.py --check    # exit 1 naming each block that differs (tests run this)

A block sits between `<!-- generated: NAME -->` and `<!-- /generated -->` in docs/qualification.md or
docs/device-runs.md; the prose around it quotes no number of its own about these files, so none can drift. Sources:
the raw collections and kept outputs in docs/qualify-runs/, the twin evidence there, the engine-noise table, and
docs/calibration-h200.json (itself reproduced from the raw files by tests/qualify/calibrate/test_analyse.py).
"""

from __future__ import annotations

import json
import lzma
import math
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RUNS = ROOT / "docs" / "qualify-runs"
DOCS = [ROOT / "docs" / "qualification.md", ROOT / "docs" / "device-runs.md"]
RAWS = {
    "0.5B, unsandboxed (2026-12-03)": "calibration-h200-2026-12-03-unsandboxed.raw.json",
    "0.5B, sandboxed (2026-12-03)": "calibration-h200-qwen0.5b-sandboxed.raw.json",
    "8B candidates (seed 11)": "calibration-h200-llama8b-candidates.raw.json",
    "8B stock6 (seed 12)": "calibration-h200-llama8b-stock6.raw.json",
    "8B stock6 (seed 13)": "calibration-h200-llama8b-stock6-seed13.raw.json",
    "8B control (seed 406650)": "calibration-h200-llama8b-control-seed406650.raw.json",
    "8B control (seed 406966)": "calibration-h200-llama8b-control-seed406966.raw.json",
    "8B control (seed 407066)": "calibration-h200-llama8b-control-seed407066.raw.json",
    "8B null (seed 417951)": "calibration-h200-llama8b-null-seed417951.raw.json",
    "8B null (seed 418051)": "calibration-h200-llama8b-null-seed418051.raw.json",
    "8B null (seed 418449)": "calibration-h200-llama8b-null-seed418449.raw.json",
    "8B null (seed 418549)": "calibration-h200-llama8b-null-seed418549.raw.json",
    "8B null (seed 418649)": "calibration-h200-llama8b-null-seed418649.raw.json",
    "8B null (seed 418978)": "calibration-h200-llama8b-null-seed418978.raw.json",
    "8B null (seed 419078)": "calibration-h200-llama8b-null-seed419078.raw.json",
    "8B null (seed 419178)": "calibration-h200-llama8b-null-seed419178.raw.json",
}
LADDER = {
    "examples/silu_triton": ("isolation-silu_triton", "accurate (Triton), bit-exact here"),
    "examples/fused_add_rmsnorm_triton": ("ladder-fused_add_rmsnorm_triton", "accurate (Triton)"),
    "examples/attention_decode_triton": ("ladder-attention_decode_triton", "accurate (Triton)"),
    "silu_rel_0_5": ("ladder-silu_rel_0_5", "silu out x (1 +- 0.5%)"),
    "silu_rel_1": ("ladder-silu_rel_1", "silu out x (1 +- 1%)"),
    "silu_1pct_with_fused": ("audit-silu_1pct_with_fused", "silu x (1 +- 1%) + accurate fused op"),
    "silu_rel_3": ("ladder-silu_rel_3", "silu out x (1 +- 3%)"),
    "silu_rows_1pct": ("ladder-silu_rows_1pct", "1% of silu rows 25% off"),
    "silu_after_n_sparse": ("audit-silu_after_n_sparse", "silu exact, then 1 element in 1024 0.25 off"),
    "fused_rel_0_5": ("ladder-fused_rel_0_5", "fused out x (1 +- 0.5%)"),
    "fused_rel_1": ("ladder-fused_rel_1", "fused out x (1 +- 1%)"),
}
"""Issue 32's ladder on the H200: run -> (evidence file under docs/qualify-runs, what its kernel does)."""
CANDIDATES = "calibration-h200-llama8b-candidates.raw.json"
BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)


def _raw(name: str):
    from hotfloat.qualify.calibrate.files import load_raw

    return load_raw(RUNS / name)


def _span(xs, fmt: str, sep: str = " to ") -> str:
    lo, hi = min(xs), max(xs)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}{sep}{fmt.format(hi)}"


def _table(head: list[str], rows: list[list]) -> str:
    return (
        "\n".join(
            [
                "| " + " | ".join(head) + " |",
                "|" + "---|" * len(head),
                *("| " + " | ".join(str(c) for c in r) + " |" for r in rows),
            ]
        )
        + "\n"
    )


def collections() -> str:
    """Per raw file: engines, boots, rounds and pass times."""
    from hotfloat.qualify.calibrate.noise import series

    rows = []
    for label, name in RAWS.items():
        raw = _raw(name)
        x = series(raw, raw.engines)
        rows.append(
            [
                label,
                " ".join(raw.engines),
                "yes" if raw.sandboxed else "no",
                _span(raw.boot_s.values(), "{:.1f}", "-") + " s",
                len(raw.rounds),
                f"{np.median(np.diff([r.t for r in raw.rounds])):.2f} s",
                _span(1e3 * np.median(x, axis=0), "{:.1f}", "-") + " ms",
                _span(1e3 * x.min(axis=0), "{:.1f}", "-") + " ms",
                _span(100 * x.std(axis=0) / x.mean(axis=0), "{:.2f}", "-") + "%",
            ]
        )
    return _table(
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
        raw = _raw(name)
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
                f"{_span(mhz.ravel(), '{:.0f}', '-')} (median {np.median(mhz):.0f})",
                f"{np.median(cpu / x):.2f}, correlation {np.corrcoef(cpu.ravel(), x.ravel())[0, 1]:.3f}",
            ]
        else:
            row += ["-", "-", "- (not recorded then)"]
        rows.append(row)
    return _table(
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
        nz = noise([_raw(name)])
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
                _span(100 * np.array(sd), "{:.2f}") + "%",
                _span(100 * np.array(med), "{:+.2f}") + "%",
                _span(100 * np.array(list(carry.values())), "{:+.2f}") + "%" if carry else "-",
                _span(100 * np.array(se), "{:.2f}") + "%" if se else "-",
                f"{ratio:.1f}" if carry else "-",
                ", ".join(f"{e} {100 * v:+.2f}%" for e, v in carry.items() if e.startswith("C")) or "-",
            ]
        )
    return _table(
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


def record() -> str:
    """The headline figures of docs/calibration-h200.json."""
    from hotfloat.qualify.calibrate.files import CalibrationRecord

    r = CalibrationRecord.model_validate_json((ROOT / "docs" / "calibration-h200.json").read_bytes())
    m, p = r.model, r.path_to_300
    null = sum(u.kind == "null" for u in r.units)
    pcs = (
        "; ".join(
            f"{c.effect:.0%}: {c.passes} of {c.qualifications} PASS, {c.mean_rounds:.1f} rounds, realised "
            f"{c.realised_effect:.2%}"
            for c in r.positive_control
        )
        or "none collected yet"
    )
    rows = [
        [
            "independent null qualifications (disjoint stock triples, first rounds until the rule decides)",
            f"{r.independent_draws} (of {null} formed)",
        ],
        ["false PASSes among them", r.false_passes_independent],
        ["one-sided 95% Clopper-Pearson bound of those two", f"{r.false_pass_upper_95:.1%}"],
        ["held out from the pre-registration", f"{r.held_out_false_passes} of {r.held_out_draws}"],
        ["positive controls (real handicapped engines)", pcs],
        [
            "secondary: pooled role permutations and blocks (correlated)",
            f"{r.pooled_false_passes} PASS of {r.pooled_draws}",
        ],
        [
            "secondary: injected into the null units' C, 1% / 2% / 5%",
            " / ".join(f"{c.passes} of {c.qualifications}" for c in r.injected) + " PASS",
        ],
        ["model: per-pass noise sigma", f"{m.sigma:.2%} ({m.passes} passes of {m.processes} stock processes)"],
        ["model: process offset tau", f"{m.tau:.3%} (upper 95% {m.tau_upper_95:.3%})"],
        [
            "model: simulated false PASS at tau / at its upper bound",
            f"{m.false_pass:.2%} / {m.false_pass_at_tau_upper:.2%} of {m.sims}",
        ],
        ["model: simulated power at 2% (upper tau)", f"{m.power_at_2pct:.1%}"],
        *_robust_rows(r.robust_model),
        ["minutes per qualification", f"{r.minutes_per_qualification:.1f}"],
        ["targets", "met" if r.meets_targets else "not met: " + "; ".join(r.shortfall)],
        [
            "path to a 1% bound",
            f"{p['units_needed']:.0f} units at no false PASS: {p['waves']:.0f} more waves of six engines "
            f"({p['units_per_wave']:.0f} units, {p['wave_minutes']:.1f} min each), {p['device_hours']:.1f} device-hours on one GPU",
        ],
    ]
    return _table(["figure", "value"], rows)


INFLUENCE_SIMS = 4000
"""Simulations per row of the influence table's power (s.e. about 0.4% at 93%); every row restarts the same seeded
stream, so rows differ by their fits, and the check stays seconds rather than minutes."""


def _robust_rows(m) -> list[list[str]]:
    """The record's robust model in the same terms as the moment model's rows."""
    if m is None:
        return [["robust model", "not in this record"]]
    return [
        [
            f"robust model (passes past {m.cut:g} robust s.d. winsorized): sigma",
            f"{m.sigma:.3%} ({m.winsorized} of {m.passes} passes winsorized)",
        ],
        ["robust model: process offset tau", f"{m.tau:.3%} (upper 95% {m.tau_upper_95:.3%})"],
        [
            "robust model: simulated false PASS at tau / at its upper bound",
            f"{m.false_pass:.2%} / {m.false_pass_at_tau_upper:.2%} of {m.sims}",
        ],
        ["robust model: simulated power at 2% (upper tau)", f"{m.power_at_2pct:.1%}"],
    ]


def influence() -> str:
    """How much one boot moves the process model: the moment and robust fits over every stock process of the record's
    sources, and both without each boot in turn, beside that boot's largest stock pass against its round's median."""
    from hotfloat.qualify.calibrate.files import CalibrationRecord
    from hotfloat.qualify.calibrate.model import fit, simulate
    from hotfloat.qualify.calibrate.noise import series
    from hotfloat.qualify.calibrate.robust import CUT

    r = CalibrationRecord.model_validate_json((ROOT / "docs" / "calibration-h200.json").read_bytes())
    label = {v: k for k, v in RAWS.items()}
    raws = [(label[Path(s).name], _raw(Path(s).name)) for s in r.sources]

    def fits(kept) -> list[str]:
        f, g = fit(kept), fit(kept, CUT)
        power = simulate(g.resid, g.tau_upper, r.rule, 0.02, INFLUENCE_SIMS, np.random.default_rng(0))
        return [
            f"{f.sigma:.2%}",
            f"{f.tau:.3%}",
            f"{f.tau_upper:.3%}",
            f"{g.sigma:.3%}",
            f"{g.tau:.3%}",
            f"{g.tau_upper:.3%}",
            str(g.winsorized),
            f"{power:.1%}",
        ]

    rows = [["(none: the record's fits)", "-", *fits([raw for _, raw in raws])]]
    for i, (name, raw) in enumerate(raws):
        x = series(raw, raw.stock)
        worst = np.max(np.abs(x / np.median(x, axis=1, keepdims=True) - 1))
        rows.append([name, f"{worst:+.1%}".lstrip("+"), *fits([other for j, (_, other) in enumerate(raws) if j != i])])
    return _table(
        [
            "boot left out",
            "its largest stock pass off its round's median",
            "moments: sigma",
            "tau",
            "tau's upper 95%",
            f"robust ({CUT:g} s.d.): sigma",
            "tau",
            "tau's upper 95%",
            "passes winsorized",
            f"robust power at 2% (upper tau, {INFLUENCE_SIMS:,} sims)",
        ],
        rows,
    )


def examples() -> str:
    """The three examples booted beside B1-B3: gate, measured effect, the verdict `calibrate evidence` forms under the
    recorded rule, and where their completions left B1's path."""
    from hotfloat.qualify.calibrate.files import load_rule
    from hotfloat.qualify.calibrate.analyse import gain
    from hotfloat.qualify.calibrate.noise import series
    from hotfloat.qualify.calibrate.evidence import KeptRound, evidence_from

    raw, rule = _raw(CANDIDATES), load_rule(ROOT / "docs" / "calibration-h200.json")
    text = lzma.decompress((RUNS / f"{CANDIDATES}.outputs.jsonl.xz").read_bytes())
    kept = {(k.round, k.engine): k for k in map(KeptRound.model_validate_json, text.splitlines())}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "out.jsonl").write_bytes(text)
        for c, bundle in zip(
            raw.candidates, ("silu_triton", "fused_add_rmsnorm_triton", "attention_decode_triton"), strict=False
        ):
            d = evidence_from(raw, Path(tmp) / "out.jsonl", c, rule).decision
            dep, worst, first, n = [], [], [], 0
            for (r, e), k in sorted(kept.items()):
                if e != c:
                    continue
                b = kept[(r, "B1")]
                for tb, tc, lb, lc in zip(b.tokens, k.tokens, b.logprobs, k.logprobs, strict=False):
                    n += 1
                    at = next((i for i, (p, q) in enumerate(zip(tb, tc, strict=False)) if p != q), None)
                    dep += [] if at is None else [at]
                    worst.append(
                        max(abs(p - q) for p, q in zip(lb[: at or len(lb)], lc[: at or len(lc)], strict=False))
                        if at != 0
                        else 0.0
                    )
                    first.append(abs(lb[0] - lc[0]))
            gate = "PASS (bitwise identical)" if not dep and max(worst) == 0 else f"{d.gate}"
            rows.append(
                [
                    f"{bundle} ({c})",
                    gate,
                    f"{gain(series(raw, [raw.stock[0], c, raw.stock[1]])):+.2%}",
                    f"**{d.status}**: {d.reason.split(';')[0]}",
                    f"{len(dep)} of {n}",
                    f"{np.median(dep):.0f}" if dep else "-",
                    f"{np.median(worst):.2f} (max {max(worst):.2f})",
                    f"{np.median(first):.2f}",
                ]
            )
    return _table(
        [
            f"example (all {len(raw.rounds)} rounds)",
            "gate",
            "measured effect",
            "verdict (`calibrate evidence`)",
            "completions off B1's path",
            "median first departing token (0-based)",
            "logprob difference before it: median of per-completion max",
            "first token's logprob difference (median)",
        ],
        rows,
    )


def twin() -> str:
    """The two twin-gate qualifications: in how many rounds C beat sqrt(B B')."""
    rows = []
    for bundle in ("attention_decode_triton", "fused_add_rmsnorm_triton"):
        ev = json.loads(lzma.decompress((RUNS / f"evidence-h200-llama8b-twin-{bundle}.json.xz").read_bytes()))
        fr = {f["index"]: f["pass_s"] for f in ev["frames"]}
        faster = sum(c < math.sqrt(b * b2) for b, c, b2 in zip(fr[0], fr[1], fr[2], strict=False))
        rows.append(
            [bundle, len(fr[1]), faster, f"{ev['decision']['status']}: {ev['decision']['reason'].split(';')[0]}"]
        )
    return _table(["example", "rounds", "C faster than sqrt(B B')", "recorded verdict"], rows)


def engine_noise() -> str:
    """tools/device/engine_noise.py's table (docs/qualify-runs/engine-noise-h200.json), every row."""
    asks = {"lp": "token logprobs", "lp+top2": "token logprobs + top-2", "none": "nothing"}
    rows = [
        [
            r["preset"],
            r["bs"],
            asks[r["mode"]],
            f"{r['median_ms']:.1f} ms",
            f"{100 * r['mad_rel']:.1f}%",
            f"{r['step_ms']:.2f}",
            f"{r['gpu_util']:.0f}% ({_span([p['util'] for p in r['passes']], '{}', '-')})",
        ]
        for r in json.loads((RUNS / "engine-noise-h200.json").read_text())
    ]
    return _table(
        ["preset", "batch", "asks back", "median pass", "spread (MAD)", "ms per step", "GPU busy: median (per pass)"],
        rows,
    )


def ladder() -> str:
    """Per ladder run: the candidate's divergence against its per-slot twin's, the audit's worst slot against
    stock's, and the verdict recorded and under today's rule (the default slacks applied to the same records)."""
    from hotfloat.qualify import QualifyOptions, recompute
    from hotfloat.qualify.audit import slot_medians
    from hotfloat.qualify.gate import LEVELS, divergence
    from hotfloat.qualify.evidence import Evidence

    today = QualifyOptions.for_device("cuda", gpu="NVIDIA H200").rule
    rows = []
    for run, (name, what) in LADDER.items():
        ev = Evidence.model_validate_json(
            lzma.decompress((RUNS / f"evidence-h200-llama8b-{name}.json.xz").read_bytes())
        )
        ref, tol = ev.frames[0], ev.rule.logprob_tol
        t, c = divergence(ref, ev.twin, tol), divergence(ref, ev.frames[1], tol)
        worst = max([c.level(q) / t.level(q) for q in LEVELS] + [c.rate / t.rate])
        cand = next((a for a in ev.audit or () if a.role == "C"), None)
        audit = [] if cand else ["not run then"]
        for slot, st in sorted(cand.slots.items() if cand else ()):
            mine, stock = slot_medians(ev.audit, cand, slot)
            audit.append(
                f"{slot.split('.')[-1]} {mine / stock:.2f}x"
                + (f" ({st.calls_failed} of {st.calls_audited} wrong)" if st.calls_failed else "")
            )
        now = recompute(
            ev.model_copy(
                update={
                    "rule": ev.rule.model_copy(
                        update={"gate_slack": today.gate_slack, "audit_slack": today.audit_slack}
                    )
                }
            )
        )
        twin = ", ".join(s.split(".")[-1] for s, n in sorted(ev.twin.routed.items()) if n)
        rows.append(
            [
                f"`{run}`",
                what,
                twin,
                f"{t.rate:.1%}",
                f"{c.rate:.1%}",
                f"{worst:.2f}",
                "; ".join(audit),
                _correctness(ev.decision),
                f"**{_correctness(now)}**",
            ]
        )
    return _table(
        [
            "run",
            "kernel",
            "twin nudged",
            "T left the path",
            "C left the path",
            "C/T (worst of 50/90/99%, rate)",
            "audit: C's median error / stock's",
            "correctness, as recorded",
            f"correctness today (gate {today.gate_slack:g}x, audit {today.audit_slack:g}x)",
        ],
        rows,
    )


def _correctness(d) -> str:
    """A decision's correctness side: PASS (speed decided the rest), or FAIL and by which check."""
    if d.gate != "FAIL":
        return d.gate
    return "FAIL by the audit" if d.reason.startswith("audit") else "FAIL by the gate"


BLOCKS = {
    "collections": collections,
    "spread": spread,
    "pairs": pairs,
    "record": record,
    "examples": examples,
    "twin": twin,
    "engine-noise": engine_noise,
    "ladder": ladder,
    "influence": influence,
}


def render(text: str, made: dict[str, str]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + made[m.group(2)] + m.group(4), text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    names = {m.group(2) for doc in DOCS for m in BLOCK.finditer(doc.read_text())}
    if unknown := names - BLOCKS.keys():
        print(f"unknown generated blocks: {sorted(unknown)}", file=sys.stderr)
        return 1
    made = {n: BLOCKS[n]() for n in names}
    stale = []
    for doc in DOCS:
        old = doc.read_text()
        new = render(old, made)
        if new != old:
            stale += [f"{doc.name}: {m.group(2)}" for m in BLOCK.finditer(old) if m.group(3) != made[m.group(2)]]
            if not check:
                doc.write_text(new)
    if check and stale:
        print(
            "generated blocks differ from the committed files (python tools/calibration_tables.py rewrites them): "
            + ", ".join(stale),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
