"""What `hotfloat qualify` and its `calibrate` commands share: the engine and rule flags, the options built from them
and the decision table."""

from __future__ import annotations

import logging

import click

from ..errors import InputError, no_gpu
from ..devices import gpu_name, resolve_device
from ..qualify.records import ATTENTION_BACKENDS
from .options import DEVICES
from .output import beneath, table


def engine_options(fn):
    """The engine and rule flags `qualify run` and `calibrate collect` share."""
    for opt in reversed(
        (
            click.option(
                "--device",
                type=click.Choice(DEVICES),
                default="auto",
                show_default=True,
                help="Engine device; auto = cuda when a GPU is visible, else cpu.",
            ),
            click.option(
                "--engine",
                "engine_kind",
                type=click.Choice(["sglang", "transformers"]),
                default=None,
                help="Serving engine [default: sglang on cuda, the transformers stand-in on cpu].",
            ),
            click.option(
                "--model",
                "model_path",
                type=click.Path(file_okay=False, exists=True),
                default=None,
                help="SGLang: a checkpoint directory instead of the generated random-weight model.",
            ),
            click.option(
                "--preset",
                default=None,
                help="Model shape of the generated model [default: tiny on cpu, llama-8b on cuda].",
            ),
            click.option(
                "--dtype",
                type=click.Choice(["fp32", "bf16", "fp16"]),
                default=None,
                help="Engine dtype [default: fp32 on cpu, bf16 on cuda].",
            ),
            click.option(
                "--decode",
                type=click.Choice(["eager", "static", "graph"]),
                default=None,
                help="Transformers engine decode steps: eager, static KV cache, or CUDA-graph replay "
                "[default: graph on cuda, eager on cpu].",
            ),
            click.option(
                "--attention",
                type=click.Choice(ATTENTION_BACKENDS),
                default=None,
                help="SGLang's attention backend in every engine [default: the GPU's: production's (flashinfer) "
                "where a packaged calibration record was made on it, else its record's].",
            ),
            click.option("--shapes", default=None, help="Workload request mix [default: tiny on cpu, sglang on cuda]."),
            click.option(
                "--look-rounds",
                type=click.IntRange(3, 512),
                default=None,
                help="Rounds (one pass on each of B, C, B') between looks of the rule [default: per device].",
            ),
            click.option(
                "--max-looks", type=click.IntRange(1, 64), default=None, help="Budget of looks [default: per device]."
            ),
            click.option(
                "--noise-floor",
                type=click.FloatRange(0, 1),
                default=None,
                help="Smallest per-pass noise the rule assumes [default: per device, from calibration].",
            ),
            click.option(
                "--drift-bound",
                type=click.FloatRange(0, 10, min_open=True),
                default=None,
                help="Largest B vs B' bias the rule accepts [default: per device].",
            ),
            click.option(
                "--logprob-tol",
                type=click.FloatRange(0),
                default=None,
                help="Gate floor on per-token logprobs; the twin's divergence sets the rest [default: 1e-3 fp32, 0.1 bf16/fp16].",
            ),
            click.option(
                "--unsandboxed",
                is_flag=True,
                help="Run engine processes WITHOUT the sandbox (only where bubblewrap is unavailable; "
                "recorded in the evidence).",
            ),
        )
    ):
        fn = opt(fn)
    return fn


def qualify_options(
    *,
    device,
    engine_kind,
    model_path,
    preset,
    dtype,
    decode,
    shapes,
    look_rounds,
    max_looks,
    noise_floor,
    drift_bound,
    logprob_tol,
    unsandboxed,
    attention=None,
    seed=None,
    rule_from=None,
    boot_timeout=None,
):
    """QualifyOptions for the device from those flags (a command passes its `engine_options` and the seed, rule and
    boot flags it has as keywords); `rule_from` is a calibration record whose rule they refine."""
    from pydantic import ValidationError

    from ..qualify import QualifyOptions

    device = resolve_device(device)
    if device == "cuda" and gpu_name() is None:  # before the calibration record it would otherwise look for
        raise no_gpu(click.get_current_context().command_path.removeprefix("hotfloat "))
    if unsandboxed:
        logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
        click.secho(
            "WARNING: --unsandboxed: candidate code runs with your files, environment and network.",
            fg="red",
            bold=True,
            err=True,
        )
    rule = {
        k: v
        for k, v in dict(
            look_rounds=look_rounds, max_looks=max_looks, noise_floor=noise_floor, drift_bound=drift_bound
        ).items()
        if v is not None
    }
    calibration = None
    if rule_from:  # the record's timing rule, under the flags given beside it (which then name no record)
        from ..qualify.calibration import read_calibration
        from ..qualify.options import rule_from as recorded_rule

        recorded = recorded_rule(read_calibration(rule_from))
        rule = {**recorded["rule"], **rule}
        logprob_tol = recorded.get("logprob_tol") if logprob_tol is None else logprob_tol
        calibration = recorded["calibration"]
    try:
        opts = QualifyOptions.for_device(
            device,
            engine_kind,
            model_path=model_path,
            preset=preset,
            dtype=dtype,
            decode=decode,
            attention=attention,
            shapes=shapes,
            seed=seed,
            sandboxed=not unsandboxed,
            logprob_tol=logprob_tol,
            rule=rule,
            calibration=calibration,
        )
    except ValidationError as e:
        raise InputError(f"bad qualification options: {e.errors()[0]['msg']}") from None
    return opts.model_copy(update={"startup_timeout_s": boot_timeout}) if boot_timeout else opts


CPU_NOTE = (
    "on a CPU, Triton kernels run in Triton's interpreter, far slower than the stock torch path: a CPU qualification "
    "checks the protocol, the gate and the audit, never speed, and a FAIL for speed here says nothing of a GPU "
    "(qualify on one with --device cuda)"
)
"""Said beside every CPU decision: the honest examples FAIL for speed there, by design."""


def decision_table(d, calibration) -> None:
    """A decision as one table row, as `run`, `recompute` and `calibrate evidence` print it: numbers whole at 80
    columns (cells fold, never cut), the reason whole beneath, then the calibration it was judged under and, where
    that record does not back it in full, the one line saying so."""
    from ..qualify.calibration import caveat

    pct = lambda v: "" if v is None else f"{v:+.2%}"  # noqa: E731
    worth = "" if calibration is None else f"{getattr(calibration, 'record', 'none')} <= {calibration.bound:.1%}"
    table(
        "decision",
        ["status", "gate", "score", "improvement", "lower", "upper", "B vs B'", "rounds", "calibration"],
        [
            (
                d.status,
                d.gate,
                f"{d.score:.4f}",
                pct(d.improvement),
                pct(d.lower),
                pct(d.upper),
                pct(d.drift),
                d.rounds,
                worth or "not recorded",
            )
        ],
        fold=True,
    )
    beneath([("reason", d.reason)], "--json")
    click.echo(f"calibration: {calibration.line() if calibration else 'not recorded (evidence before v5)'}")
    if calibration is not None and (line := caveat(d.status, calibration)):
        click.secho(line, fg="yellow", bold=True)


def calibration_json(status: str, calibration) -> dict:
    """The calibration keys of a verdict's `--json`: the record (or none and why), the verdict's worth (a PASS is
    `full` only under a record that meets its targets) and the caveat line."""
    from ..qualify.calibration import caveat

    if calibration is None:
        return {"calibration": None, "worth": None, "caveat": "calibration not recorded (evidence before v5)"}
    worth = ("full" if calibration.meets_targets else "provisional") if status == "PASS" else None
    return {"calibration": calibration.model_dump(mode="json"), "worth": worth, "caveat": caveat(status, calibration)}
