"""`hotfloat chain intake|status|weights`: the validator's side of the chain, each through the validator ledger: take
reveals in, show the subnet as this validator sees it, publish weights from settled crowns.

The bittensor SDK takes seconds to import, so it is imported inside each command, never here.
"""

from __future__ import annotations

import click
from pydantic import TypeAdapter, ValidationError

from ..chain.fetch import FetchPolicy
from ..chain.payload import parse_commit, parse_reveal
from ..chain.weights import WEIGHTS_EVERY, crown_weights
from ..errors import InputError
from ..record import first_error
from ..validator import Crown
from .chain_options import ledger_option, netuid_option, network_option, wallet_options
from .options import read_input, writable_ledger
from .output import emit_json, json_option, table


@click.command("intake")
@netuid_option
@network_option
@ledger_option
@click.option(
    "--deadline",
    type=click.FloatRange(0.1, 600),
    default=30.0,
    show_default=True,
    help="Total seconds allowed per archive fetch.",
)
@click.option(
    "--cafile",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Extra CA bundle to trust for origins (e.g. a test CA).",
)
@click.option("--allow-private", is_flag=True, help="Allow origins on private or loopback addresses (tests only).")
@click.option(
    "--reveal-after",
    type=click.IntRange(1, 250),
    default=10,
    show_default=True,
    help="Take a reveal only this many blocks or more after its commit.",
)
@click.option(
    "--reveal-within",
    type=click.IntRange(1, 250),
    default=200,
    show_default=True,
    help="Refuse reveals later than this many blocks after their commit.",
)
@json_option
def intake_cmd(
    netuid: int,
    network: str,
    ledger_path: str,
    deadline: float,
    cafile: str | None,
    allow_private: bool,
    reveal_after: int,
    reveal_within: int,
    as_json: bool,
) -> None:
    """Decide every new finalized reveal: check it opens its digest, fetch, verify, check for copies and enqueue it,
    or refuse it with a code and a reason."""
    from ..chain.client import Chain
    from ..chain.intake import run_intake
    from ..chain.reveal import RevealPolicy
    from ..chain.tables import open_ledger

    policy = FetchPolicy(deadline_s=deadline, cafile=cafile, allow_private=allow_private)
    try:
        reveals = RevealPolicy(reveal_after, reveal_within)
    except ValueError as e:
        raise InputError(str(e)) from None
    client, ledger = Chain(network), open_ledger(writable_ledger(ledger_path))
    try:
        decisions = run_intake(client, ledger, netuid, policy, reveals=reveals)
    finally:
        client.close()
        ledger.close()
    if as_json:
        emit_json([d.model_dump(mode="json") for d in decisions])
        return
    table(
        "hotfloat chain intake",
        ["uid", "hotkey", "commit", "identity", "outcome", "code", "reason"],
        [
            (
                d.uid,
                d.hotkey,
                d.commit_block,
                (d.identity or "")[:16],
                d.outcome.value,
                d.code.value if d.code else "",
                d.reason,
            )
            for d in decisions
        ],
    )


@click.command("status")
@netuid_option
@network_option
@click.option(
    "--ledger",
    "ledger_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="This validator's ledger, to show its view of each commitment.",
)
@json_option
def status_cmd(netuid: int, network: str, ledger_path: str | None, as_json: bool) -> None:
    """Show the subnet's finalized commitments and this validator's view of each."""
    from ..chain.client import Chain
    from ..chain.intake import digest, observations
    from ..chain.tables import open_ledger

    client = Chain(network)
    try:
        block = client.finalized()
        rows = client.commitments(netuid, block)
    finally:
        client.close()
    seen = {}
    if ledger_path:
        ledger = open_ledger(ledger_path)
        try:
            seen = observations(ledger, netuid)
        finally:
            ledger.close()
    out = []
    for c in rows:
        sealed = parse_commit(c.data)
        try:
            p = parse_reveal(c.data)
            identity, url = p.h, p.u
        except ValueError as e:
            identity, url = None, "" if sealed else f"({e})"
        undecided = ("a digest, awaiting its reveal" if sealed else "undecided", "", None)
        view = seen.get((c.hotkey, c.block, digest(c.data)), undecided)
        out.append(
            {
                "uid": c.uid,
                "hotkey": c.hotkey,
                "block": c.block,
                "identity": identity,
                "url": url,
                "view": view[0],
                "reason": view[1],
                "submission": view[2],
            }
        )
    if as_json:
        emit_json({"netuid": netuid, "finalized_block": block, "commitments": out})
        return
    table(
        f"subnet {netuid} commitments at finalized block {block}",
        ["uid", "hotkey", "block", "identity", "url", "view", "reason"],
        [
            (r["uid"], r["hotkey"], r["block"], (r["identity"] or "")[:16], r["url"], r["view"], r["reason"])
            for r in out
        ],
    )


@click.command("weights")
@click.option(
    "--crowns",
    "crowns_path",
    type=click.Path(exists=True, dir_okay=False),
    required=True,
    help="JSON list of settled crowns, one per slot (hotfloat.validator.Crown: winner, runner_up, weights, reason).",
)
@netuid_option
@network_option
@wallet_options
@ledger_option
@click.option(
    "--every",
    type=click.IntRange(1),
    default=WEIGHTS_EVERY,
    show_default=True,
    help="Blocks per publication window: one publication per window, as `validator run --weights-every`.",
)
@click.option("--dry-run", is_flag=True, help="Show the uid vector and its u16 form without sending.")
@json_option
def weights_cmd(
    crowns_path: str,
    netuid: int,
    network: str,
    wallet_name: str,
    hotkey: str,
    wallet_path: str | None,
    ledger_path: str,
    every: int,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Map settled crowns to the owners' uids and publish the weights once in the head's window, through the ledger's
    journal (the publisher `validator run --chain` uses); a window already journaled keeps its vector."""
    from ..chain.client import Chain, load_wallet
    from ..chain.cycle import publish_crowns
    from ..chain.intake import owners
    from ..chain.tables import open_ledger

    crowns = _read_crowns(crowns_path)
    client, ledger = Chain(network), open_ledger(writable_ledger(ledger_path))
    try:
        weights = crown_weights(crowns, owners(ledger, netuid), client.hotkeys(netuid))
        if not weights:
            raise InputError("no crowned identity has a registered owner on the subnet: nothing to weight")
        u16 = client.preview_weights(netuid, weights)
        info: dict = {"netuid": netuid, "weights": weights, "u16": u16, "dry_run": dry_run}
        if not dry_run:
            wallet = load_wallet(wallet_name, hotkey, wallet_path)
            pub = publish_crowns(client, ledger, netuid, wallet, crowns, every)
            weights, u16 = pub.weights, pub.u16
            info.update(
                weights=weights,
                u16=u16,
                round=pub.round,
                state=pub.state.value,
                extrinsic=pub.extrinsic_id,
                reason=pub.reason,
            )
    finally:
        client.close()
        ledger.close()
    if as_json:
        emit_json(info)
        return
    table(
        f"weights for subnet {netuid}" + (" (dry run)" if dry_run else ""),
        ["uid", "weight", "u16"],
        [(uid, f"{w:.4f}", u16.get(uid, 0)) for uid, w in sorted(weights.items())],
    )
    if not dry_run:
        click.echo(f"round {info['round']}: {info['state']} {info['extrinsic'] or ''} {info['reason']}".rstrip())


CROWNS_BYTES = 1 << 20
"""One crown per slot: a few hundred bytes each."""


def _read_crowns(path: str) -> list[Crown]:
    try:
        crowns = TypeAdapter(list[Crown]).validate_json(read_input(path, CROWNS_BYTES, "crowns file"))
    except ValidationError as e:
        raise InputError(f"{path}: {first_error(e, 'crowns')}") from None
    if not crowns:
        raise InputError(f"{path}: no crowns")
    return crowns
