"""`hotfloat preflight`: device readiness, static compatibility and behavioral readiness, answered separately."""

import click

from ..preflight import QUESTIONS, preflight
from ..errors import ExitCode, HotfloatError
from .options import DEVICES
from .output import emit_json, fit, json_option, table, wide_option


class PreflightFailed(HotfloatError):
    """At least one preflight question did not pass; the message names which."""

    exit_code = ExitCode.FAIL
    grpc_status = "FAILED_PRECONDITION"


@click.command("preflight")
@click.option(
    "--device",
    type=click.Choice(DEVICES),
    default="auto",
    show_default=True,
    help="Device to check; auto = cuda when a GPU is visible, else cpu.",
)
@click.option(
    "--only", "only", multiple=True, type=click.Choice(QUESTIONS), help="Ask only these questions (repeatable)."
)
@wide_option
@json_option
def preflight_cmd(device: str, only: tuple[str, ...], wide: bool, as_json: bool) -> None:
    """Check this host before trusting it: exit 1 naming each question (device, static, behavioral) that failed."""
    report = preflight(None if device == "auto" else device, tuple(only) or QUESTIONS)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        table(
            f"hotfloat preflight ({report.device})",
            ["question", "check", "status", "detail"],
            [(c.question, c.name, c.status.value, c.detail) for c in report.checks],
            width=fit(wide),
        )
        table(
            None,
            ["question", "status"],
            [(q, s.value) for q, s in report.questions.items() if q in (only or QUESTIONS)],
        )
    if report.failed:
        raise PreflightFailed(
            "preflight failed: " + ", ".join(f"{q} ({report.questions[q].value})" for q in report.failed)
        )
