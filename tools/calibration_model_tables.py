"""The generated tables about docs/calibration-h200.json (tools/calibration_tables.py writes them into the docs): its
headline figures, and how much one boot moves the process model it fits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from calibration_sources import RAWS, ROOT, md_table, raw_file


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
    return md_table(["figure", "value"], rows)


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
    raws = [(label[Path(s).name], raw_file(Path(s).name)) for s in r.sources]

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
    return md_table(
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
