"""`hotfloat qualify`: complete-engine A/B of a bundle, recompute of a decision from its evidence, calibration."""

from __future__ import annotations

import logging

import click

from ..errors import InputError
from .output import emit_json, json_option, progress, table


class _DefaultRun(click.Group):
    """`hotfloat qualify BUNDLE` means `hotfloat qualify run BUNDLE`."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


def _engine_options(fn):
    for opt in reversed((
        click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="Engine device."),
        click.option("--preset", default=None, help="Engine model preset [default: tiny on cpu, qwen2-0.5b on cuda]."),
        click.option("--dtype", type=click.Choice(["fp32", "bf16", "fp16"]), default=None,
                     help="Engine dtype [default: fp32 on cpu, bf16 on cuda]."),
        click.option("--decode", type=click.Choice(["eager", "static", "graph"]), default=None,
                     help="Decode steps: eager, static KV cache, or CUDA-graph replay "
                          "[default: graph on cuda, eager on cpu]."),
        click.option("--shapes", default=None, help="Workload request mix [default: tiny on cpu, gpu on cuda]."),
        click.option("--passes", type=click.IntRange(1, 64), default=2, show_default=True, help="Timed passes per run."),
        click.option("--max-pairs", type=click.IntRange(1, 32), default=3, show_default=True,
                     help="Budget of candidate runs (each between two baseline runs)."),
        click.option("--noise-floor", type=click.FloatRange(0, 1), default=0.003, show_default=True,
                     help="Smallest run-to-run noise the rule assumes (from calibrate)."),
        click.option("--logprob-tol", type=click.FloatRange(0), default=None,
                     help="Gate tolerance on per-token logprobs; 0 = exact [default: 1e-3 fp32, 0.1 bf16/fp16]."),
        click.option("--unsandboxed", is_flag=True,
                     help="Run engine processes WITHOUT the sandbox (only where bubblewrap is unavailable; "
                          "recorded in the evidence)."),
    )):
        fn = opt(fn)
    return fn


def _options(device, preset, dtype, decode, shapes, passes, max_pairs, noise_floor, logprob_tol, unsandboxed, seed=None):
    from ..qualify import QualifyOptions, RuleConfig
    from ..qualify.engine import PRESETS
    from ..qualify.workload import SHAPES

    preset = preset or ("tiny" if device == "cpu" else "qwen2-0.5b")
    shapes = shapes or ("tiny" if device == "cpu" else "gpu")
    if preset not in PRESETS or shapes not in SHAPES:
        raise InputError(f"unknown --preset {preset!r} or --shapes {shapes!r}; presets: {', '.join(PRESETS)}; "
                         f"shapes: {', '.join(SHAPES)}")
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho("WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
                    fg="red", bold=True, err=True)
    dtype = dtype or ("fp32" if device == "cpu" else "bf16")
    tol = logprob_tol if logprob_tol is not None else (1e-3 if dtype == "fp32" else 0.1)
    try:
        return QualifyOptions(
            preset=preset, device=device, dtype=dtype, decode=decode, shapes=shapes, passes=passes, seed=seed,
            sandboxed=not unsandboxed, rule=RuleConfig(max_pairs=max_pairs, noise_floor=noise_floor, logprob_tol=tol))
    except ValueError as e:
        raise InputError(f"bad qualification options: {e}") from None


@click.group("qualify", cls=_DefaultRun)
def qualify() -> None:
    """Qualify a bundle on the complete engine (B C B' in fresh processes): `hotfloat qualify BUNDLE`."""


@qualify.command("run")
@click.argument("bundle", type=click.Path(file_okay=False, path_type=str))
@_engine_options
@click.option("--seed", type=int, default=None, help="Workload prompt seed (default: a fresh secret one).")
@click.option("--evidence", "evidence_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the evidence (every raw frame) to this JSON file.")
@json_option
def run_cmd(bundle, device, preset, dtype, decode, shapes, passes, max_pairs, noise_floor, logprob_tol, unsandboxed,
            seed, evidence_path, as_json):
    """Qualify BUNDLE against the stock engine: correctness gate, then the speed decision. Exit 0 PASS, 2 FAIL."""
    from ..bundle import load_bundle
    from ..qualify import qualify_bundle, save_evidence

    opts = _options(device, preset, dtype, decode, shapes, passes, max_pairs, noise_floor, logprob_tol, unsandboxed, seed)
    b = load_bundle(bundle)
    with progress() as bar:
        task = bar.add_task("qualify", total=2 * max_pairs + 1)
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
        table(f"qualify {b.manifest.bundle_id}  sandbox={sandbox}", ["run", "role", "ok", "median latency ms", "tok/s", "routed"], [
            (f.index, f.role, "ok" if f.ok else "FAIL!", _median_ms(f), f"{f.tokens_per_s:.0f}",
             sum(f.routed.values())) for f in result.evidence.frames])
        _decision_table(d)
    if result.status == "FAIL":
        raise SystemExit(2)


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


@qualify.command("calibrate")
@_engine_options
@click.option("--levels", default="0,1,2,4", show_default=True, help="Injected differences (activation passes removed).")
@click.option("--base-passes", type=click.IntRange(0, 256), default=8, show_default=True,
              help="Extra activation passes in the baseline engine.")
@click.option("--rounds", type=click.IntRange(1, 100), default=2, show_default=True, help="Cycles over the levels.")
@click.option("--trials", type=click.IntRange(10, 100000), default=2000, show_default=True,
              help="Qualifications drawn from the run pool per level.")
@json_option
def calibrate_cmd(device, preset, dtype, decode, shapes, passes, max_pairs, noise_floor, logprob_tol, unsandboxed,
                  levels, base_passes, rounds, trials, as_json):
    """Measure the rule's false PASS rate (B against B) and the smallest speed-up it detects at 95% power."""
    from ..qualify.calibrate import analyse, pool_runs
    from ..qualify.engine import PRESETS
    from ..qualify.workload import make_workload

    opts = _options(device, preset, dtype, decode, shapes, passes, max_pairs, noise_floor, logprob_tol, unsandboxed)
    try:
        lv = sorted({int(x) for x in levels.split(",")})
    except ValueError:
        raise InputError(f"--levels must be comma-separated integers, got {levels!r}") from None
    if not lv or min(lv) < 0 or max(lv) > base_passes:
        raise InputError(f"--levels must lie in [0, --base-passes={base_passes}]")
    engine = opts.engine()
    workload = make_workload(opts.shapes, PRESETS[opts.preset]["vocab_size"], passes=opts.passes)
    with progress() as bar:
        task = bar.add_task("calibrate", total=rounds * 2 * len(lv) + 1)
        pool = pool_runs(engine, workload, lv, rounds, base_passes, sandboxed=opts.sandboxed,
                         progress=lambda d, i, n: bar.update(task, description=d, completed=i))
    report = analyse(pool, opts.rule, trials)
    if as_json:
        emit_json(report.model_dump(mode="json"))
        return
    table("calibration: the rule on real engine runs", ["level", "true improvement", "PASS", "FAIL", "NO_DECISION",
                                                       "mean pairs", "PASS (noise model)"], [
        (r.level, f"{r.true_improvement:+.2%}", f"{r.pass_rate:.1%}", f"{r.fail_rate:.1%}", f"{r.no_decision_rate:.1%}",
         f"{r.mean_pairs:.2f}", f"{r.model_pass_rate:.1%}") for r in report.levels])
    click.echo(f"runs {report.runs}, {report.run_seconds:.1f} s each; sigma_run {report.sigma_run:.3%}, "
               f"sigma_request {report.sigma_request:.3%}; false PASS {report.false_pass_rate:.2%} "
               f"(model {report.model_false_pass_rate:.2%}); smallest detected at 95% power: "
               f"{'none' if report.smallest_detected is None else f'{report.smallest_detected:.2%}'}; "
               f"one qualification ~{report.qualification_minutes:.1f} min")


def _median_ms(frame) -> str:
    if not frame.ok:
        return frame.error or ""
    import statistics

    return f"{1000 * statistics.median(x for row in frame.latency_s for x in row):.1f}"


def _decision_table(d) -> None:
    pct = lambda v: "" if v is None else f"{v:+.2%}"  # noqa: E731
    table("decision", ["status", "gate", "score", "improvement", "lower", "upper", "B drift", "pairs", "reason"], [
        (d.status, d.gate, f"{d.score:.4f}", pct(d.improvement), pct(d.lower), pct(d.upper), pct(d.drift), d.pairs, d.reason)])
