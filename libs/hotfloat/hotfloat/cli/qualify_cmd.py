"""`hotfloat qualify`: complete-engine A/B of a bundle, recompute of a decision from its evidence, calibration."""

from __future__ import annotations

import logging

import click

from ..errors import InputError
from .options import DEVICES, bundle_argument, open_bundle, resolve_device
from .output import emit_json, exit_with, json_option, progress, table


class _DefaultRun(click.Group):
    """`hotfloat qualify BUNDLE` means `hotfloat qualify run BUNDLE`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _engine_options(fn):
    for opt in reversed((
        click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
                     help="Engine device; auto = cuda when a GPU is visible, else cpu."),
        click.option("--engine", "engine_kind", type=click.Choice(["sglang", "transformers"]), default=None,
                     help="Serving engine [default: sglang on cuda, the transformers stand-in on cpu]."),
        click.option("--model", "model_path", type=click.Path(file_okay=False, exists=True), default=None,
                     help="SGLang: a checkpoint directory instead of the generated random-weight model."),
        click.option("--preset", default=None, help="Model shape of the generated model [default: tiny on cpu, "
                                                     "llama-8b on cuda]."),
        click.option("--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default=None,
                     help="Engine dtype [default: fp32 on cpu, bf16 on cuda]."),
        click.option("--decode", type=click.Choice(["eager", "static", "graph"]), default=None,
                     help="Transformers engine decode steps: eager, static KV cache, or CUDA-graph replay "
                          "[default: graph on cuda, eager on cpu]."),
        click.option("--shapes", default=None, help="Workload request mix [default: tiny on cpu, sglang on cuda]."),
        click.option("--look-rounds", type=click.IntRange(3, 512), default=None,
                     help="Rounds (one pass on each of B, C, B') between looks of the rule [default: per device]."),
        click.option("--max-looks", type=click.IntRange(1, 64), default=None,
                     help="Budget of looks [default: per device]."),
        click.option("--noise-floor", type=click.FloatRange(0, 1), default=None,
                     help="Smallest per-pass noise the rule assumes [default: per device, from calibration]."),
        click.option("--drift-bound", type=click.FloatRange(0, 10, min_open=True), default=None,
                     help="Largest B vs B' bias the rule accepts [default: per device]."),
        click.option("--logprob-tol", type=click.FloatRange(0), default=None,
                     help="Gate floor on per-token logprobs; the twin's divergence sets the rest [default: 1e-3 fp32, 0.1 bf16/fp16]."),
        click.option("--unsandboxed", is_flag=True,
                     help="Run engine processes WITHOUT the sandbox (only where bubblewrap is unavailable; "
                          "recorded in the evidence)."),
    )):
        fn = opt(fn)
    return fn


def _options(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
             drift_bound, logprob_tol, unsandboxed, seed=None):
    from pydantic import ValidationError

    from ..qualify import QualifyOptions

    device = resolve_device(device)
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho("WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
                    fg="red", bold=True, err=True)
    rule = {k: v for k, v in dict(look_rounds=look_rounds, max_looks=max_looks, noise_floor=noise_floor,
                                  drift_bound=drift_bound).items() if v is not None}
    try:
        return QualifyOptions.for_device(device, engine_kind, model_path=model_path, preset=preset, dtype=dtype,
                                         decode=decode, shapes=shapes, seed=seed, sandboxed=not unsandboxed,
                                         logprob_tol=logprob_tol, rule=rule)
    except ValidationError as e:
        raise InputError(f"bad qualification options: {e.errors()[0]['msg']}") from None


@click.group("qualify", cls=_DefaultRun)
def qualify() -> None:
    """Qualify a bundle on the complete engine (B C B' in fresh processes): `hotfloat qualify BUNDLE`."""


@qualify.command("run")
@bundle_argument
@_engine_options
@click.option("--seed", type=int, default=None, help="Workload prompt seed (default: a fresh secret one).")
@click.option("--evidence", "evidence_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the evidence (every raw frame) to this JSON file.")
@click.option("--boot-timeout", type=click.FloatRange(1, 3600), default=None,
              help="Seconds the three engines get to boot, arm and warm up [default: 900].")
@json_option
def run_cmd(bundle, device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
            drift_bound, logprob_tol, unsandboxed, seed, evidence_path, boot_timeout, as_json):
    """Qualify BUNDLE against the stock engine: correctness gate, then the speed decision. Exit 0 PASS, 1 FAIL,
    5 NO_DECISION."""
    from ..qualify import qualify_bundle, save_evidence

    opts = _options(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
                    drift_bound, logprob_tol, unsandboxed, seed)
    if boot_timeout:
        opts = opts.model_copy(update={"startup_timeout_s": boot_timeout})
    b = open_bundle(bundle)
    with progress() as bar:
        task = bar.add_task("qualify", total=opts.rule.max_rounds)
        result = qualify_bundle(b, opts, progress=lambda d, i, n: bar.update(task, description=d, completed=i))
    if evidence_path:
        save_evidence(result.evidence, evidence_path)
    d = result.evidence.decision
    if as_json:
        emit_json({"status": result.status, "score": result.score, "reason": result.reason,
                   "decision": d.model_dump(mode="json"), "bundle_identity": result.evidence.bundle_identity,
                   "sandboxed": result.evidence.sandboxed, "evidence": evidence_path})
    else:
        sandbox = "on" if result.evidence.sandboxed else "NONE (--unsandboxed)"
        table(f"qualify {b.manifest.bundle_id}  sandbox={sandbox}", ["engine", "role", "ok", "boot s", "median pass ms",
                                                                      "tok/s", "routed"], [
            (f.index, {2: "B'", 3: "T (twin, untimed)"}.get(f.index, f.role), "ok" if f.ok else "FAIL!", f"{f.boot_s:.1f}",
             _median_ms(f), f"{f.tokens_per_s:.0f}", sum(f.routed.values()))
            for f in [*result.evidence.frames, *filter(None, [result.evidence.twin])]])
        _decision_table(d)
    exit_with(result.status)


@qualify.command("recompute")
@click.argument("evidence", type=click.Path(dir_okay=False, path_type=str))
@json_option
def recompute_cmd(evidence, as_json):
    """Recompute the decision from EVIDENCE alone; exit 2 if it differs from the recorded one."""
    from ..qualify import load_evidence, recompute

    ev = load_evidence(evidence)
    d = recompute(ev)
    same = d == ev.decision
    if as_json:
        emit_json({"matches": same, "recomputed": d.model_dump(mode="json"), "recorded": ev.decision.model_dump(mode="json")})
    else:
        _decision_table(d)
        click.echo("matches the recorded decision" if same else "DIFFERS from the recorded decision")
    if not same:
        raise InputError(f"recomputed decision {d.status} ({d.reason}) differs from the recorded {ev.decision.status}")


@qualify.group("calibrate")
def calibrate() -> None:
    """Calibrate the rule: `collect` raw pass timings of resident stock engines (on the device), then `analyse`."""


@calibrate.command("collect")
@_engine_options
@click.option("--stock", type=click.IntRange(3, 8), default=3, show_default=True, help="Stock engines to boot.")
@click.option("--candidate", "candidates", type=click.Path(file_okay=False, exists=True), multiple=True,
              help="Also boot an engine with this bundle armed (C1, C2, ... in order; repeatable).")
@click.option("--keep-rounds", type=click.IntRange(0, 1000), default=0, show_default=True,
              help="Keep the completions of B1, B2 and the candidates in this many first rounds (for `evidence`).")
@click.option("--budget", type=click.FloatRange(10, 36000), default=300, show_default=True,
              help="Wall seconds for the whole collection, boots included; the last round ends before it.")
@click.option("--seed", type=int, default=None, help="Workload prompt and order seed.")
@click.option("--boot-timeout", type=click.FloatRange(1, 3600), default=None,
              help="Seconds the engines get to boot, arm and warm up [default: 900].")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), required=True,
              help="Raw JSON, rewritten after every round.")
def collect_cmd(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
                drift_bound, logprob_tol, unsandboxed, stock, candidates, keep_rounds, budget, seed, boot_timeout, out_path):
    """Boot STOCK stock engines (and a candidate) as resident engines and time rounds until the budget is spent."""
    import sys
    from pathlib import Path

    from ..errors import InfrastructureError
    from ..qualify.calibrate import collect
    from ..qualify.resident import EngineFault

    opts = _options(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
                    drift_bound, logprob_tol, unsandboxed, seed)
    if boot_timeout:
        opts = opts.model_copy(update={"startup_timeout_s": boot_timeout})
    try:
        raw = collect(opts, Path(out_path), stock=stock, candidates={f"C{i + 1}": c for i, c in enumerate(candidates)},
                      budget_s=budget, keep_rounds=keep_rounds, progress=lambda m: click.echo(m, err=True),
                      command=" ".join(["hotfloat", *sys.argv[1:]]))
    except (RuntimeError, EngineFault) as e:
        raise InfrastructureError(f"calibration collection stopped: {str(e)[:1500]}") from None
    click.echo(f"{len(raw.rounds)} rounds of {len(raw.stock) + len(raw.candidates)} engines -> {out_path}")


@calibrate.command("analyse")
@click.argument("raw", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the calibration record (e.g. docs/calibration-h200.json).")
@click.option("--logprob-tol", type=click.FloatRange(0), default=0.1, show_default=True,
              help="Gate tolerance recorded in the chosen rule.")
@click.option("--boot-draws", type=click.IntRange(0, 1000000), default=1000, show_default=True,
              help="Round-bootstrap qualifications per rule and effect (a model; 0 skips).")
@json_option
def analyse_cmd(raw, out_path, logprob_tol, boot_draws, as_json):
    """Decisions of every rule in the grid on RAW files: false PASS (B vs B'), power at injected 1/2/5%, minutes."""
    import sys

    from pydantic import ValidationError

    from ..qualify.calibrate import analyse, default_grid, load_raw

    try:
        raws = [load_raw(p) for p in raw]
        record = analyse(raws, default_grid(logprob_tol), boot_draws=boot_draws, sources=[str(p) for p in raw],
                         command=" ".join(["hotfloat", *sys.argv[1:]]))
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
    pct = lambda v: f"{v:.1%}"  # noqa: E731
    table("calibration: rules on the raw rounds", ["look", "looks", "process floor", "false PASS", "boot FP", "power 1%",
                                                   "power 2%", "power 5%", "min", "ok"], [
        (c.rule.look_rounds, c.rule.max_looks, c.rule.process_floor, f"{pct(c.rows[0].pass_rate)} of {c.rows[0].draws}",
         pct(c.rows[0].bootstrap_pass_rate), pct(c.rows[1].pass_rate), pct(c.rows[2].pass_rate), pct(c.rows[3].pass_rate),
         f"{c.minutes:.1f}", "yes" if c.meets_targets else "") for c in record.candidates])
    click.echo(f"chosen: look_rounds={record.rule.look_rounds} max_looks={record.rule.max_looks} "
               f"process_floor={record.rule.process_floor}; false PASS {pct(record.false_pass_rate)} over "
               f"{record.draws_b_vs_b} draws ({record.independent_draws} independent, upper 95% "
               f"{pct(record.false_pass_upper_95)}); power 2% {pct(record.power_at_2pct)}; "
               f"{record.minutes_per_qualification:.1f} min per qualification")


@calibrate.command("evidence")
@click.argument("raw", type=click.Path(dir_okay=False, exists=True))
@click.option("--candidate", required=True, help="Candidate engine name in RAW (C1, C2, ...).")
@click.option("--rule-from", "rule_from", type=click.Path(dir_okay=False, exists=True), required=True,
              help="A calibration record (e.g. docs/calibration-h200.json) whose chosen rule decides.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), required=True,
              help="Evidence file to write (`hotfloat qualify recompute` checks it).")
@json_option
def evidence_cmd(raw, candidate, rule_from, out_path, as_json):
    """Form a qualification of CANDIDATE from a collection's kept rounds (B1 as B, B2 as B') under a calibrated rule."""
    from pathlib import Path

    from pydantic import ValidationError

    from ..qualify import save_evidence
    from ..qualify.calibrate import evidence_from, load_raw, load_rule

    rule = load_rule(rule_from)
    try:
        ev = evidence_from(load_raw(raw), Path(f"{raw}.outputs.jsonl"), candidate, rule)
    except (ValidationError, ValueError, OSError) as e:
        raise InputError(f"cannot form evidence for {candidate}: {str(e).splitlines()[0]}") from None
    save_evidence(ev, out_path)
    d = ev.decision
    if as_json:
        emit_json({"status": d.status, "score": d.score, "reason": d.reason, "decision": d.model_dump(mode="json"),
                   "evidence": out_path})
    else:
        _decision_table(d)
    exit_with(d.status)


def _median_ms(frame) -> str:
    if not frame.ok:
        return frame.error or ""
    import statistics

    return f"{1000 * statistics.median(frame.pass_s):.1f}" if frame.pass_s else ""


def _decision_table(d) -> None:
    pct = lambda v: "" if v is None else f"{v:+.2%}"  # noqa: E731
    table("decision", ["status", "gate", "score", "improvement", "lower", "upper", "B vs B'", "rounds", "reason"], [
        (d.status, d.gate, f"{d.score:.4f}", pct(d.improvement), pct(d.lower), pct(d.upper), pct(d.drift), d.rounds, d.reason)])
