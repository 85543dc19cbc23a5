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
             drift_bound, logprob_tol, unsandboxed, seed=None, rule_from=None):
    from pydantic import ValidationError

    from ..qualify import QualifyOptions

    device = resolve_device(device)
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho("WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
                    fg="red", bold=True, err=True)
    rule = {k: v for k, v in dict(look_rounds=look_rounds, max_looks=max_looks, noise_floor=noise_floor,
                                  drift_bound=drift_bound).items() if v is not None}
    if rule_from:  # the record's timing rule, under the flags given beside it
        from ..qualify.api import rule_given
        from ..qualify.calibrate import load_rule

        recorded = rule_given(load_rule(rule_from))
        rule = {**recorded["rule"], **rule}
        logprob_tol = recorded.get("logprob_tol") if logprob_tol is None else logprob_tol
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
@click.option("--no-gpu-isolation", "unisolated", is_flag=True,
              help="On CUDA, qualify even where idle engines cannot be locked out of the GPU (no checkpoint API; "
                   "recorded in the evidence).")
@click.option("--rule-from", "rule_from", type=click.Path(dir_okay=False),
              help="Decide with the timing rule this calibration record chose (e.g. docs/calibration-h200.json); "
                   "rule flags given beside it win [default: the device's rule].")
@json_option
def run_cmd(bundle, device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
            drift_bound, logprob_tol, unsandboxed, seed, evidence_path, boot_timeout, unisolated, rule_from, as_json):
    """Qualify BUNDLE against the stock engine: correctness gate, then the speed decision. Exit 0 PASS, 1 FAIL,
    5 NO_DECISION."""
    from ..qualify import qualify_bundle, save_evidence

    opts = _options(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
                    drift_bound, logprob_tol, unsandboxed, seed, rule_from)
    if boot_timeout:
        opts = opts.model_copy(update={"startup_timeout_s": boot_timeout})
    if unisolated:
        click.secho("WARNING: --no-gpu-isolation: an idle engine's GPU work is not locked out of the timed passes.",
                    fg="red", bold=True, err=True)
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
        emit_json({"status": result.status, "score": result.score, "reason": result.reason,
                   "decision": d.model_dump(mode="json"), "bundle_identity": result.evidence.bundle_identity,
                   "sandboxed": result.evidence.sandboxed, "isolation": iso.model_dump(mode="json") if iso else None,
                   "evidence": evidence_path})
    else:
        sandbox = "on" if result.evidence.sandboxed else "NONE (--unsandboxed)"
        iso = result.evidence.isolation
        isolation = f"  isolation={iso.mode} ({iso.cost_ms_median:.0f} ms/pass)" if iso else ""
        table(f"qualify {b.manifest.bundle_id}  sandbox={sandbox}{isolation}", ["engine", "role", "ok", "boot s", "median pass ms",
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
@click.option("--stock", type=click.IntRange(1, 8), default=3, show_default=True,
              help="Stock engines to boot (B1, B2, ...; three make a null qualification, one is C of a positive control).")
@click.option("--handicap", "handicaps", multiple=True, metavar="EFFECT COUNT",
              type=(click.FloatRange(0, 0.5, min_open=True, max_open=True), click.IntRange(1, 8)),
              help="Also boot COUNT stock engines slowed by a validator-added GPU delay after every activation call, "
                   "sized so a stock engine saves EFFECT of their pass (H1, H2, ...; the positive control; repeatable).")
@click.option("--handicap-pass-ms", type=click.FloatRange(1, 600000), default=1300, show_default=True,
              help="The stock pass the handicap is sized against (the llama-8b default pass on the H200).")
@click.option("--max-rounds", type=click.IntRange(1, 100000), default=None, help="Stop after this many rounds.")
@click.option("--export-cache", type=click.Path(file_okay=False), default=None,
              help="After the rounds, copy stock engine B1's JIT caches here (e.g. $HOTFLOAT_ENGINE_ROOT/cache, which "
                   "seeds later engines).")
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
                drift_bound, logprob_tol, unsandboxed, stock, handicaps, handicap_pass_ms, max_rounds, export_cache, candidates,
                keep_rounds, budget, seed, boot_timeout, out_path):
    """Boot STOCK stock engines (and handicapped and candidate ones) as resident engines and time rounds until the
    budget is spent."""
    import sys
    from pathlib import Path

    from ..errors import InfrastructureError
    from ..qualify.calibrate_collect import collect
    from ..qualify.resident import EngineFault

    opts = _options(device, engine_kind, model_path, preset, dtype, decode, shapes, look_rounds, max_looks, noise_floor,
                    drift_bound, logprob_tol, unsandboxed, seed)
    if boot_timeout:
        opts = opts.model_copy(update={"startup_timeout_s": boot_timeout})
    handicap: dict[float, int] = {}
    for effect, count in handicaps:
        handicap[effect] = handicap.get(effect, 0) + count
    try:
        raw = collect(opts, Path(out_path), stock=stock, handicap=handicap, handicap_pass_s=handicap_pass_ms / 1e3,
                      candidates={f"C{i + 1}": c for i, c in enumerate(candidates)}, budget_s=budget, max_rounds=max_rounds,
                      keep_rounds=keep_rounds, export_cache=export_cache, progress=lambda m: click.echo(m, err=True),
                      command=" ".join(["hotfloat", *sys.argv[1:]]))
    except (RuntimeError, EngineFault) as e:
        raise InfrastructureError(f"calibration collection stopped: {str(e)[:1500]}") from None
    click.echo(f"{len(raw.rounds)} rounds of {len(raw.engines)} engines -> {out_path}")


@calibrate.command("analyse")
@click.argument("raw", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True))
@click.option("--preregistered", "prereg_path", type=click.Path(dir_okay=False, exists=True), required=True,
              help="The rule fixed before these collections (e.g. docs/calibration-h200.preregistered.json).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), default=None,
              help="Write the calibration record (e.g. docs/calibration-h200.json).")
@click.option("--sims", type=click.IntRange(0, 1000000), default=10000, show_default=True,
              help="Simulated qualifications per figure of the fitted process model (0 skips).")
@json_option
def analyse_cmd(raw, prereg_path, out_path, sims, as_json):
    """The pre-registered rule on RAW files: false PASS on independent units, positive controls, the noise model."""
    import sys

    from pydantic import ValidationError

    from ..qualify.calibrate import load_preregistration, load_raw
    from ..qualify.calibrate_analyse import analyse

    prereg = load_preregistration(prereg_path)
    try:
        raws = [load_raw(p) for p in raw]
        record = analyse(raws, prereg, sims=sims, sources=[str(p) for p in raw], command=" ".join(["hotfloat", *sys.argv[1:]]))
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
    r, m = record, record.model
    table("calibration: the pre-registered rule on independent units", ["qualifications", "effect", "n", "PASS", "FAIL",
                                                                        "mean rounds", "realised"], [
        ("null (independent)", "0", r.independent_draws, r.false_passes_independent, "", "",
         f"upper 95% {r.false_pass_upper_95:.1%}"),
        ("null (held out)", "0", r.held_out_draws, r.held_out_false_passes, "", "", f"upper 95% {r.held_out_upper_95:.1%}"),
        *(("positive control", f"{c.effect:.1%}", c.qualifications, c.passes, c.fails, f"{c.mean_rounds:.1f}",
           f"{c.realised_effect:.2%}") for c in r.positive_control),
        *(("injected (model)", f"{c.effect:.0%}", c.qualifications, c.passes, c.fails, f"{c.mean_rounds:.1f}", "")
          for c in r.injected),
        ("pooled (correlated)", "0", r.pooled_draws, r.pooled_false_passes, "", "", "")])
    click.echo(f"process model: sigma {m.sigma:.2%} per pass, tau {m.tau:.3%} (upper 95% {m.tau_upper_95:.3%}) over "
               f"{m.processes} processes; simulated false PASS {m.false_pass:.2%} ({m.false_pass_at_tau_upper:.2%} at "
               f"the upper tau), power at 2% {m.power_at_2pct:.1%}; {r.minutes_per_qualification:.1f} min per qualification")
    click.echo("meets the targets" if r.meets_targets else "targets not met: " + "; ".join(r.shortfall))


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
    from ..qualify.calibrate import load_raw, load_rule
    from ..qualify.calibrate_evidence import evidence_from

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
