"""`hotfloat qualify`: complete-engine A/B of a bundle, recompute of a decision from its evidence, calibration."""

from __future__ import annotations

import click

from ..errors import InputError
from .calibrate_cmd import calibrate
from .options import bundle_argument, open_bundle, seed_option
from .output import beneath, emit_json, exit_with, json_option, progress, table
from .qualify_options import CPU_NOTE, calibration_json, decision_table, engine_options, qualify_options


class _DefaultRun(click.Group):
    """`hotfloat qualify BUNDLE` means `hotfloat qualify run BUNDLE`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("qualify", cls=_DefaultRun)
def qualify() -> None:
    """Qualify a bundle on the complete engine (B C B' in fresh processes): `hotfloat qualify BUNDLE`."""


qualify.add_command(calibrate)


@qualify.command("run")
@bundle_argument
@engine_options
@seed_option("the prompts and the order of each round")
@click.option(
    "--evidence",
    "evidence_path",
    type=click.Path(dir_okay=False, writable=True),
    default=None,
    help="Write the evidence (every raw frame) to this JSON file.",
)
@click.option(
    "--boot-timeout",
    type=click.FloatRange(1, 3600),
    default=None,
    help="Seconds the three engines get to boot, arm and warm up [default: 900].",
)
@click.option(
    "--no-gpu-isolation",
    "unisolated",
    is_flag=True,
    help="On CUDA, qualify even where idle engines cannot be locked out of the GPU (no checkpoint API; "
    "recorded in the evidence).",
)
@click.option(
    "--rule-from",
    "rule_from",
    type=click.Path(dir_okay=False),
    help="Decide with the timing rule this calibration record chose (e.g. docs/calibration-h200.json); "
    "rule flags given beside it win [default: the device's rule].",
)
@json_option
def run_cmd(bundle, evidence_path, unisolated, as_json, **flags):
    """Qualify BUNDLE against the stock engine: correctness gate, then the speed decision. Exit 0 PASS, 1 FAIL,
    5 NO_DECISION."""
    from ..qualify import qualify_bundle, save_evidence

    opts = qualify_options(**flags)
    if unisolated:
        click.secho(
            "WARNING: --no-gpu-isolation: an idle engine's GPU work is not locked out of the timed passes.",
            fg="red",
            bold=True,
            err=True,
        )
        opts = opts.model_copy(update={"gpu_isolation": False})
    b = open_bundle(bundle)
    with progress() as bar:
        task = bar.add_task("qualify", total=opts.rule.max_rounds)
        result = qualify_bundle(b, opts, progress=lambda d, i, n: bar.update(task, description=d, completed=i))
    if evidence_path:
        save_evidence(result.evidence, evidence_path)
    d = result.evidence.decision
    if as_json:
        iso = result.evidence.isolation
        emit_json(
            {
                "status": result.status,
                "score": result.score,
                "reason": result.reason,
                "decision": d.model_dump(mode="json"),
                "bundle_identity": result.evidence.bundle_identity,
                "engine": result.evidence.engine.model_dump(mode="json"),
                "seed": result.evidence.workload.seed,
                "sandboxed": result.evidence.sandboxed,
                "isolation": iso.model_dump(mode="json") if iso else None,
                "memory": result.evidence.memory.model_dump(mode="json") if result.evidence.memory else None,
                "evidence": evidence_path,
                **calibration_json(result.status, result.evidence.calibration),
            }
        )
    else:
        sandbox = "on" if result.evidence.sandboxed else "NONE (--unsandboxed)"
        iso = result.evidence.isolation
        isolation = f"  isolation={iso.mode} ({iso.cost_ms_median:.0f} ms/pass)" if iso else ""
        if mem := result.evidence.memory:
            p = mem.plan
            isolation += f"  memory={p.resident}x{p.share_bytes / 2**30:.1f} GiB" + (
                " twin-apart-from-C" if p.twin_apart else ""
            )
        cal, engine = result.evidence.calibration, result.evidence.engine
        if engine.kind == "sglang":  # the baseline's kernels, chosen per GPU and per bundle (options.for_slots)
            isolation += f"  attention={engine.attention}"
        isolation += f"  calibration={getattr(cal, 'record', 'none')}"
        table(
            f"qualify {b.manifest.bundle_id}  seed={result.evidence.workload.seed}  sandbox={sandbox}{isolation}",
            ["engine", "role", "ok", "boot s", "median pass ms", "tok/s", "routed", "peak GiB"],
            [
                (
                    f.index,
                    {2: "B'", 3: "T (twin, untimed)"}.get(f.index, f.role),
                    "ok" if f.ok else "FAIL!",
                    f"{f.boot_s:.1f}",
                    _median_ms(f),
                    f"{f.tokens_per_s:.0f}",
                    sum(f.routed.values()),
                    _peak_gib(result.evidence.memory, f"{f.index}{f.role}"),
                )
                for f in [*result.evidence.frames, *filter(None, [result.evidence.twin])]
            ],
        )
        decision_table(d, cal)
        if opts.device == "cpu":
            beneath([("note", CPU_NOTE)], "")
    exit_with(result.status)


def _peak_gib(memory, name: str) -> str:
    """The most GPU memory the engine held at any reading; blank where memory was not read (CPU engines)."""
    held = memory.engines.get(name) if memory else None
    return f"{held.peak_bytes / 2**30:.1f}" if held else ""


@qualify.command("recompute")
@click.argument("evidence", type=click.Path(dir_okay=False, path_type=str))
@click.option(
    "--record",
    "records",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A calibration record the evidence may name that this package does not ship (e.g. an older version); "
    "repeatable.",
)
@json_option
def recompute_cmd(evidence, records, as_json):
    """Recompute the decision from EVIDENCE alone and hold its calibration to the record it names (by digest);
    exit 2 if either differs from what the evidence says."""
    from ..qualify import load_evidence, recompute
    from ..qualify.calibration import read_calibration
    from ..qualify.evidence import check_calibration

    ev = load_evidence(evidence)
    d = recompute(ev)
    same = d == ev.decision
    checked = check_calibration(ev, [read_calibration(r) for r in records])
    said = {
        None: "",
        True: "calibration checked against its record",
        False: "calibration NOT checked: the record it names is not at hand (give it with --record)",
    }[checked]
    if as_json:
        emit_json(
            {
                "matches": same,
                "recomputed": d.model_dump(mode="json"),
                "recorded": ev.decision.model_dump(mode="json"),
                "calibration_checked": checked,
                **calibration_json(d.status, ev.calibration),
            }
        )
    else:
        decision_table(d, ev.calibration)
        click.echo("matches the recorded decision" if same else "DIFFERS from the recorded decision")
        if said:
            click.echo(said)
    if not same:
        raise InputError(f"recomputed decision {d.status} ({d.reason}) differs from the recorded {ev.decision.status}")


def _median_ms(frame) -> str:
    if not frame.ok:
        return frame.error or ""
    import statistics

    return f"{1000 * statistics.median(frame.pass_s):.1f}" if frame.pass_s else ""
