"""`hotfloat validator run --spawn`: the services as local processes on Unix sockets with a fresh token."""

from __future__ import annotations

import contextlib
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hotfloat.admission.scope import QUICK_ADMISSION

from ..common.process import ServiceProcess


def service_args(
    name: str, *, quick: bool = False, rule_from: Path | None = None, attention: str | None = None
) -> tuple[str, ...]:
    """The options `spawned` gives service `name` beyond its socket, token and device."""
    if name == "admission" and quick:
        return QUICK_ADMISSION.flags()
    if name == "qualification":
        return (
            *(("--rule-from", str(rule_from)) if rule_from is not None else ()),
            *(("--attention", attention) if attention is not None else ()),
        )
    return ()


@contextlib.contextmanager
def spawned(
    names: tuple[str, ...],
    *,
    device: str = "cpu",
    quick: bool = False,
    rule_from: Path | None = None,
    attention: str | None = None,
    workdir: Path | None = None,
) -> Iterator[tuple[dict[str, str], str]]:
    """Starts each named service in its own process (qualification deciding with the rule `rule_from`'s calibration
    record chose, when given); yields ({name: target}, token); stops them all on exit."""
    with contextlib.ExitStack() as stack:
        root = workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="hotfloat-svc-")))
        token = secrets.token_urlsafe(32)
        token_file = root / "token"
        token_file.touch(mode=0o600)
        token_file.write_text(token)
        procs = []
        for name in names:
            proc = ServiceProcess(
                name,
                root / f"{name}.sock",
                token_file,
                device=device,
                extra=service_args(name, quick=quick, rule_from=rule_from, attention=attention),
                log=root / f"{name}.log",
            )
            stack.callback(proc.stop)
            procs.append(proc.launch())
        yield {p.name: p.wait_ready().target for p in procs}, token
