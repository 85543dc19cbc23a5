"""`hotfloat validator run`: its many flags, each overriding the same setting of a --config file, mapped onto one
ValidatorConfig, and the run itself until the queue is worked or SIGTERM."""

from __future__ import annotations

import signal
import threading
import time

import click
from click.core import ParameterSource

from ..chain.weights import WEIGHTS_EVERY
from ..qualify.records import ATTENTION_BACKENDS
from ..validator.config import load_config
from .chain_options import wallet_options
from .options import DEVICES, ledger_option, writable_ledger
from .output import emit_json, json_option, table

THROUGH = ("scanned", "built", "admitted", "qualified", "scored")


@click.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="A TOML file of these settings (docs/services.md); flags given on the command line override it.",
)
@ledger_option()
@click.option("--spawn", is_flag=True, help="Start the services as local processes on private Unix sockets.")
@click.option(
    "--local",
    is_flag=True,
    help="Run the stages in this process, without services (candidate code still runs only in sandboxed children).",
)
@click.option(
    "--compiler",
    help="Compiler address: socket path, unix:PATH, HOST:PORT or dns:///NAME:PORT (beyond loopback only with --tls-*).",
)
@click.option(
    "--admission",
    multiple=True,
    help="Admission worker address (repeatable: calls go to the least busy; "
    "a dns:/// name is balanced over all its addresses by gRPC).",
)
@click.option(
    "--qualification",
    multiple=True,
    help="Qualification endpoint (repeatable: one run in flight per endpoint, "
    "a reproduction on another endpoint than its first run); without any the run stops at admitted.",
)
@click.option(
    "--token-file",
    type=click.Path(exists=True, dir_okay=False),
    help="Deployment token for the services (default: $HOTFLOAT_TOKEN); --spawn makes its own.",
)
@click.option(
    "--tls-ca",
    type=click.Path(exists=True, dir_okay=False),
    help="CA for mutual TLS to the services (needed for any address beyond loopback and for dns:/// targets).",
)
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False), help="Client certificate for mutual TLS.")
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False), help="Client key for mutual TLS.")
@click.option(
    "--device",
    type=click.Choice(DEVICES),
    default="auto",
    show_default=True,
    help="Device of spawned or local admission and qualification; auto = cuda when a GPU is visible, else cpu.",
)
@click.option(
    "--quick", is_flag=True, help="Spawned or local admission verifies one shape per op in fp32 (smoke runs only)."
)
@click.option(
    "--rule-from",
    "rule_from",
    type=click.Path(dir_okay=False),
    help="With --spawn: spawn the qualification service too, deciding with the rule this calibration record "
    "chose (as `hotfloat serve qualification --rule-from`), e.g. docs/calibration-h200.json; with --local: "
    "qualify with that rule.",
)
@click.option(
    "--attention",
    type=click.Choice(ATTENTION_BACKENDS),
    help="With --spawn or --local: SGLang's attention backend in every qualification engine [default: the GPU's: "
    "production's (flashinfer) where a packaged calibration record was made on it, else its record's].",
)
@click.option(
    "--through",
    type=click.Choice(THROUGH),
    help="Last state to reach (default: scored with a qualification service, else admitted).",
)
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True, help="Submissions worked at once.")
@click.option(
    "--max-attempts",
    type=click.IntRange(1, 20),
    default=3,
    show_default=True,
    help="Tries per stage after infrastructure faults before NO_DECISION.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="Keep polling the ledger for new submissions until SIGTERM (exit 0: calls "
    "in flight finish and are recorded, calls waiting for an endpoint are dropped unrecorded) or SIGINT.",
)
@click.option(
    "--chain",
    "network",
    help="Take in commitments and set weights on this network each cycle: finney, test, "
    "local, a ws(s):// endpoint or standin:PATH. Without it the run works the ledger only.",
)
@click.option("--netuid", type=click.IntRange(0, 65535), help="Subnet id (with --chain).")
@wallet_options
@click.option(
    "--weights-every",
    type=click.IntRange(1),
    default=WEIGHTS_EVERY,
    show_default=True,
    help="Set weights from the crown table once per this many blocks (with --chain).",
)
@click.option(
    "--cafile", type=click.Path(exists=True, dir_okay=False), help="Extra CA bundle to trust for archive origins."
)
@click.option(
    "--allow-private", is_flag=True, help="Allow archive origins on private or loopback addresses (tests only)."
)
@click.option(
    "--max-runs",
    type=click.IntRange(2, 10),
    help="Most qualifications one submission gets: a PASS is reproduced until the combined false-PASS bound of its "
    "runs' calibration records meets the target, within this [default: 3].",
)
@click.option(
    "--provisional",
    type=click.Choice(["held", "crowned"]),
    help="A PASS whose combined bound cannot meet the target: held out of every crown, or crowned and named "
    "provisional [default: held].",
)
@click.option(
    "--reveal-after",
    type=click.IntRange(1, 250),
    default=10,
    show_default=True,
    help="Take a reveal only this many blocks or more after its digest was committed (with --chain).",
)
@click.option(
    "--reveal-within",
    type=click.IntRange(1, 250),
    default=200,
    show_default=True,
    help="Refuse reveals later than this many blocks after their commit (with --chain).",
)
@click.option("--feed", help="Serve the signed report feed over HTTPS on HOST:PORT, at /feed.json (with --chain).")
@click.option("--feed-cert", type=click.Path(exists=True, dir_okay=False), help="The feed's TLS certificate (PEM).")
@click.option("--feed-key", type=click.Path(exists=True, dir_okay=False), help="The feed's TLS private key (PEM).")
@json_option
def run(config_path, as_json, **flags) -> None:
    """Work the ledger's queue: resume interrupted submissions, then every received one, to a final state."""
    from hotfloat_services.validator.node import Validator

    ctx = click.get_current_context()
    given = {k: v for k, v in flags.items() if ctx.get_parameter_source(k) is not ParameterSource.DEFAULT}
    config = load_config(config_path, _settings(given), defaults={"ledger": flags["ledger_path"]})
    start = time.monotonic()
    writable_ledger(config.ledger)
    last, why = config.last_state()
    node = Validator(
        config,
        on_event=lambda sid, stage, msg: click.echo(f"#{sid} {stage}: {msg}", err=True),
        report=lambda msg: click.echo(msg, err=True),
    )
    stop = threading.Event()  # SIGTERM, also while starting: nothing new, calls in flight finish, waits are abandoned
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with node:  # once the services are up: a refused setting is the one line a failed start prints
        if why:
            click.echo(f"note: submissions stop at {last}: {why}", err=True)
        counts = node.run(stop)
    if as_json:
        emit_json({"counts": counts, "seconds": round(time.monotonic() - start, 3), "through": last, "stopped": why})
    else:
        click.echo(f"ledger: {config.ledger}")  # on its own line: a table title would break the path mid-word
        table(None, ["state", "submissions"], [(s, n) for s, n in counts.items() if n])
        if why and counts.get(last):
            click.echo(f"stopped at {last}: {why}")


CHAIN = {
    "network": "network",
    "netuid": "netuid",
    "wallet_name": "wallet",
    "hotkey": "hotkey",
    "wallet_path": "wallet_path",
    "weights_every": "weights_every",
    "cafile": "cafile",
    "allow_private": "allow_private",
    "reveal_after": "reveal_after",
    "reveal_within": "reveal_within",
    "feed": "feed",
    "feed_cert": "feed_cert",
    "feed_key": "feed_key",
}
"""`validator run` flags that set the config's [chain] table, by the key each sets."""
SETTLEMENT = ("max_runs", "provisional")
"""`validator run` flags that set the config's [settlement] table."""
RENAMED = {"ledger_path": "ledger", "spawn": None, "local": None}


def _settings(flags: dict) -> dict:
    """The config keys and tables the given flags set (`ValidatorConfig`'s names)."""
    out = {
        RENAMED.get(k, k): v
        for k, v in flags.items()
        if k not in CHAIN and k not in SETTLEMENT and not k.startswith("tls_")
    }
    out.pop(None, None)
    for name, stages in (("spawn", "spawned"), ("local", "local")):
        if flags.get(name):
            out["stages"] = stages
    for name in ("admission", "qualification"):
        if name in out:
            out[name] = list(out[name])
    if tls := {k.removeprefix("tls_"): v for k, v in flags.items() if k.startswith("tls_")}:
        out["tls"] = tls
    if chain := {key: flags[k] for k, key in CHAIN.items() if k in flags}:
        out["chain"] = chain
    if settlement := {k: flags[k] for k in SETTLEMENT if k in flags}:
        out["settlement"] = settlement
    return out
