"""`hotfloat validator submit|run|status`: the validator's queue, its pipeline run (with the chain's intake and
weights when given a network), and the ledger's view of both."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import click
from click.core import ParameterSource

from ..bundle import load_bundle, pack
from ..chain.weights import WEIGHTS_EVERY
from ..errors import InputError
from ..ledger import ORDER, Ledger, State
from ..validator.config import load_config
from ..validator.evidence import EVIDENCE
from ..validator.standings import crowns, scores
from .chain_cmd import wallet_options
from .options import DEVICES, ledger_option, note_ignored, read_archive, writable_ledger
from .output import emit_json, json_option, table

LEDGER = ledger_option()
THROUGH = ("scanned", "built", "admitted", "qualified", "scored")


@click.group("validator")
def validator() -> None:
    """Queue submissions and move them through compile, admission, qualification and scoring."""


@validator.command("submit")
@click.argument("bundles", nargs=-1, required=True, type=click.Path(exists=True))
@LEDGER
@click.option("--submitter", default="local", show_default=True, help="Who offers the bundles (e.g. a hotkey).")
@json_option
def submit(bundles, ledger_path, submitter, as_json) -> None:
    """Add bundle directories or .tar.gz archives to the ledger as received submissions."""
    rows = []
    with Ledger(writable_ledger(ledger_path)) as led:
        for path in bundles:
            p = Path(path)
            archive = pack(note_ignored(load_bundle(p), path)) if p.is_dir() else read_archive(p)
            sub, created = led.receive(archive, submitter=submitter, source=str(p))
            rows.append(
                {
                    "id": sub.id,
                    "identity": sub.identity,
                    "bundle_id": sub.bundle_id,
                    "state": sub.state.value,
                    "new": created,
                }
            )
    if as_json:
        emit_json(rows)
    else:
        table(
            "submitted",
            ["id", "bundle", "identity", "state", "new"],
            [
                (r["id"], r["bundle_id"], r["identity"][:16], r["state"], "yes" if r["new"] else "already known")
                for r in rows
            ],
        )


@validator.command("run")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="A TOML file of these settings (docs/services.md); flags given on the command line override it.",
)
@LEDGER
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
@json_option
def run(config_path, as_json, **flags) -> None:
    """Work the ledger's queue: resume interrupted submissions, then every received one, to a final state."""
    from hotfloat_services.validator.node import Validator

    ctx = click.get_current_context()
    given = {k: v for k, v in flags.items() if ctx.get_parameter_source(k) is not ParameterSource.DEFAULT}
    config = load_config(config_path, _settings(given), defaults={"ledger": flags["ledger_path"]})
    start = time.monotonic()
    writable_ledger(config.ledger)
    node = Validator(
        config,
        on_event=lambda sid, stage, msg: click.echo(f"#{sid} {stage}: {msg}", err=True),
        report=lambda msg: click.echo(msg, err=True),
    )
    stop = threading.Event()  # SIGTERM, also while starting: nothing new, calls in flight finish, waits are abandoned
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with node:
        counts = node.run(stop)
    if as_json:
        emit_json({"counts": counts, "seconds": round(time.monotonic() - start, 3)})
    else:
        click.echo(f"ledger: {config.ledger}")  # on its own line: a table title would break the path mid-word
        table(None, ["state", "submissions"], [(s, n) for s, n in counts.items() if n])


CHAIN = {
    "network": "network",
    "netuid": "netuid",
    "wallet_name": "wallet",
    "hotkey": "hotkey",
    "wallet_path": "wallet_path",
    "weights_every": "weights_every",
    "cafile": "cafile",
    "allow_private": "allow_private",
}
"""`validator run` flags that set the config's [chain] table, by the key each sets."""
RENAMED = {"ledger_path": "ledger", "spawn": None, "local": None}


def _settings(flags: dict) -> dict:
    """The config keys and tables the given flags set (`ValidatorConfig`'s names)."""
    out = {RENAMED.get(k, k): v for k, v in flags.items() if k not in CHAIN and not k.startswith("tls_")}
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
    return out


@validator.command("status")
@click.argument("submission", type=click.IntRange(1, (1 << 63) - 1), required=False)
@LEDGER
@json_option
def status(submission, ledger_path, as_json) -> None:
    """Show the queue, each submission's state, score and crown, and each slot set's crown; or one SUBMISSION's
    transitions and attempts."""
    if not Path(ledger_path).exists():
        raise InputError(f"{ledger_path}: no ledger here (run `hotfloat validator submit` first)")
    with Ledger(ledger_path, evidence=EVIDENCE) as led:
        if submission is not None:
            _show_one(led, submission, as_json)
            return
        subs, counts, kept, crowned = led.submissions(), led.counts(), scores(led), crowns(led)
    held = {
        i: ("winner" if i == c.winner else "runner-up") for c in crowned.values() for i in (c.winner, c.runner_up) if i
    }
    rows = [
        {**s.model_dump(mode="json"), "score": kept[s.id][1] if s.id in kept else None, "crown": held.get(s.identity)}
        for s in subs
    ]
    if as_json:
        emit_json(
            {
                "counts": counts,
                "submissions": rows,
                "crowns": {pool: c.model_dump(mode="json") for pool, c in crowned.items()},
            }
        )
        return
    table(
        "queue",
        ["state", "submissions"],
        [(s.value, counts[s.value]) for s in (*ORDER, State.FAILED, State.NO_DECISION)],
    )
    table(
        "submissions",
        ["id", "bundle", "identity", "submitter", "state", "score", "crown", "reason"],
        [
            (
                r["id"],
                r["bundle_id"],
                r["identity"][:16],
                r["submitter"],
                r["state"],
                "" if r["score"] is None else f"{r['score']:.4f}",
                r["crown"] or "",
                r["reason"][:120],
            )
            for r in rows
        ],
    )
    if crowned:
        names = {s.identity: s.bundle_id for s in subs}
        table(
            "crowns",
            ["slot set", "winner", "runner-up", "reason"],
            [
                (pool, names.get(c.winner, c.winner or ""), names.get(c.runner_up, c.runner_up or ""), c.reason[:120])
                for pool, c in crowned.items()
            ],
        )


def _show_one(led: Ledger, sid: int, as_json: bool) -> None:
    sub = led.get(sid)
    transitions, attempts = led.transitions(sid), led.attempts(sid)
    if as_json:
        emit_json(
            {
                "submission": sub.model_dump(mode="json"),
                "transitions": [t.model_dump(mode="json") for t in transitions],
                "attempts": [a.model_dump(mode="json") for a in attempts],
            }
        )
        return
    table(
        f"submission {sid} ({sub.bundle_id}, {sub.identity[:16]})",
        ["from", "to", "reason"],
        [(t.from_state.value if t.from_state else "", t.to_state.value, t.reason[:160]) for t in transitions],
    )
    table(
        "attempts",
        ["stage", "try", "outcome", "reason"],
        [(a.stage, a.number, a.outcome or "running", a.reason[:160]) for a in attempts],
    )
