"""`hotfloat compat` and `hotfloat chain-compat`: pinned-version and seam-signature canaries for SGLang and Bittensor."""

from __future__ import annotations

import click

from ..compat import check
from ..errors import ExitCode, HotfloatError
from ..verdict import Status
from .output import emit_json, json_option, table


class CompatFailed(HotfloatError):
    """A canary row failed: the installed stack is not the pinned one hotfloat's seams were written against."""

    exit_code = ExitCode.FAIL
    grpc_status = "FAILED_PRECONDITION"


def _render(target: str, python: str | None, as_json: bool) -> None:
    report = check(target, python)
    if as_json:
        emit_json(report.model_dump(mode="json"))
    else:
        table(
            f"{target} compatibility ({report.python})",
            ["", "check", "detail"],
            [("[ok]" if r.status is Status.PASS else "[FAIL]", r.name, r.detail) for r in report.rows],
        )
    if report.status is not Status.PASS:
        failed = [r.name for r in report.rows if r.status is not Status.PASS]
        raise CompatFailed(f"{target} compat failed: {', '.join(failed)}")


@click.command("compat")
@click.option("--python", "python", type=click.Path(dir_okay=False), help="Interpreter of the engine venv to check.")
@json_option
def compat(python: str | None, as_json: bool) -> None:
    """Check the installed SGLang against the pin and every seam hotfloat hooks (exit 1 on any FAIL)."""
    _render("sglang", python, as_json)


@click.command("chain-compat")
@click.option("--python", "python", type=click.Path(dir_okay=False), help="Interpreter to check (default: this one).")
@json_option
def chain_compat(python: str | None, as_json: bool) -> None:
    """Check the installed Bittensor SDK against the pin and the calls the chain layer makes; no network."""
    _render("bittensor", python, as_json)
