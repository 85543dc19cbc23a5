"""`hotfloat qualify calibrate`: the group; `collect` (raw pass timings of resident engines, on the device) is in
calibrate_collect_cmd; here, from collected files off the device: `analyse` them under the pre-registered rule into a
calibration record, and form `evidence` from a collection's kept rounds."""

from __future__ import annotations

import click

from ..errors import InputError
from .calibrate_collect_cmd import collect_cmd
from .output import emit_json, exit_with, json_option, table
from .qualify_options import calibration_json, decision_table


@click.group("calibrate", commands=[collect_cmd])
def calibrate() -> None:
    """Calibrate the rule: `collect` raw pass timings of resident stock engines (on the device), then `analyse`."""


@calibrate.command("analyse")
@click.argument("raw", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option(
    "--preregistered",
    "prereg_path",
    type=click.Path(dir_okay=False, exists=True),
    required=True,
    help="The rule fixed before these collections (e.g. docs/calibration-h200.preregistered.json).",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the calibration record (e.g. docs/calibration-h200.json).",
)
@click.option(
    "--sims",
    type=click.IntRange(0, 1000000),
    default=10000,
    show_default=True,
    help="Simulated qualifications per figure of the fitted process model (0 skips).",
)
@json_option
def analyse_cmd(raw, prereg_path, out_path, sims, as_json):
    """The pre-registered rule on RAW files: false PASS on independent units, positive controls, the noise model."""
    import sys

    from pydantic import ValidationError

    from ..qualify.calibrate.files import load_preregistration, load_raw
    from ..qualify.calibrate.analyse import analyse

    prereg = load_preregistration(prereg_path)
    try:
        raws = [load_raw(p) for p in raw]
        record = analyse(
            raws, prereg, sims=sims, sources=[str(p) for p in raw], command=" ".join(["hotfloat", *sys.argv[1:]])
        )
    except (ValidationError, ValueError, OSError) as e:
        raise InputError(f"cannot analyse {', '.join(raw)}: {str(e).splitlines()[0]}") from None
    if out_path:
        from pathlib import Path

        try:
            Path(out_path).write_text(record.model_dump_json(indent=1) + "\n")
        except OSError as e:
            raise InputError(f"cannot write {out_path}: {e.strerror or e}") from None
    if as_json:
        emit_json(record.model_dump(mode="json"))
        return
    r = record
    table(
        "calibration: the pre-registered rule on independent units",
        ["qualifications", "effect", "n", "PASS", "FAIL", "mean rounds", "realised"],
        [
            (
                "null (independent)",
                "0",
                r.independent_draws,
                r.false_passes_independent,
                "",
                "",
                f"upper 95% {r.false_pass_upper_95:.1%}",
            ),
            (
                "null (held out)",
                "0",
                r.held_out_draws,
                r.held_out_false_passes,
                "",
                "",
                f"upper 95% {r.held_out_upper_95:.1%}",
            ),
            *(
                (
                    "positive control",
                    f"{c.effect:.1%}",
                    c.qualifications,
                    c.passes,
                    c.fails,
                    f"{c.mean_rounds:.1f}",
                    f"{c.realised_effect:.2%}",
                )
                for c in r.positive_control
            ),
            *(
                ("injected (model)", f"{c.effect:.0%}", c.qualifications, c.passes, c.fails, f"{c.mean_rounds:.1f}", "")
                for c in r.injected
            ),
            ("pooled (correlated)", "0", r.pooled_draws, r.pooled_false_passes, "", "", ""),
        ],
    )
    for label, m in (("process model", r.model), ("robust model", r.robust_model)):
        if m is None:
            continue
        clipped = f", {m.winsorized} of {m.passes} passes winsorized" if label == "robust model" else ""
        click.echo(
            f"{label}: sigma {m.sigma:.2%} per pass, tau {m.tau:.3%} (upper 95% {m.tau_upper_95:.3%}) over "
            f"{m.processes} processes{clipped}; simulated false PASS {m.false_pass:.2%} "
            f"({m.false_pass_at_tau_upper:.2%} at the upper tau), power at 2% {m.power_at_2pct:.1%}"
        )
    click.echo(f"{r.minutes_per_qualification:.1f} min per qualification")
    click.echo("meets the targets" if r.meets_targets else "targets not met: " + "; ".join(r.shortfall))


@calibrate.command("evidence")
@click.argument("raw", type=click.Path(dir_okay=False, exists=True))
@click.option("--candidate", required=True, help="Candidate engine name in RAW (C1, C2, ...).")
@click.option(
    "--rule-from",
    "rule_from",
    type=click.Path(dir_okay=False, exists=True),
    required=True,
    help="A calibration record (e.g. docs/calibration-h200.json) whose chosen rule decides.",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, writable=True),
    required=True,
    help="Evidence file to write (`hotfloat qualify recompute` checks it).",
)
@json_option
def evidence_cmd(raw, candidate, rule_from, out_path, as_json):
    """Form a qualification of CANDIDATE from a collection's kept rounds (B1 as B, B2 as B') under a calibrated rule."""
    from pathlib import Path

    from pydantic import ValidationError

    from ..qualify import save_evidence
    from ..qualify.calibrate.evidence import evidence_from
    from ..qualify.calibrate.files import load_raw
    from ..qualify.calibration import read_calibration

    file = read_calibration(rule_from)
    try:
        ev = evidence_from(load_raw(raw), Path(f"{raw}.outputs.jsonl"), candidate, file.rule, file)
    except (ValidationError, ValueError, OSError) as e:
        raise InputError(f"cannot form evidence for {candidate}: {str(e).splitlines()[0]}") from None
    save_evidence(ev, out_path)
    d = ev.decision
    if as_json:
        emit_json(
            {
                "status": d.status,
                "score": d.score,
                "reason": d.reason,
                "decision": d.model_dump(mode="json"),
                "evidence": out_path,
                **calibration_json(d.status, ev.calibration),
            }
        )
    else:
        decision_table(d, ev.calibration)
    exit_with(d.status)
