"""`hotfloat chain ...`: package and commit bundles (miner), take them in, show the subnet, publish weights (validator).

The bittensor SDK takes seconds to import, so modules that load it are imported inside the commands that need them
and every other `hotfloat` command stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import TypeAdapter, ValidationError

from ..bundle.layout import OUTPUT_DIR
from ..chain.fetch import FetchPolicy
from ..chain.miner import commitment, package
from ..chain.payload import parse_payload
from ..chain.weights import WEIGHTS_EVERY, crown_weights
from ..errors import InputError
from ..record import first_error
from ..validator import Crown
from .options import bundle_argument, ledger_option as _ledger_option, read_input, writable_ledger
from .output import emit_json, json_option, table


def network_option(fn):
    """--network, shared so every chain command names networks the same way."""
    return click.option(
        "--network",
        default="finney",
        show_default=True,
        envvar="HOTFLOAT_CHAIN_NETWORK",
        help="finney, test, local, a ws(s):// endpoint, or standin:PATH for the local stand-in chain.",
    )(fn)


def netuid_option(fn):
    """--netuid, required: a commitment or weight on the wrong subnet is never what anyone wants."""
    return click.option("--netuid", type=click.IntRange(0, 65535), required=True, help="Subnet id.")(fn)


def wallet_options(fn):
    """--wallet/--hotkey/--wallet-path: the hotkey signs commitments and weights."""
    fn = click.option("--wallet-path", default=None, help="Wallet directory (default ~/.bittensor/wallets).")(fn)
    fn = click.option("--hotkey", default="default", show_default=True, help="Hotkey name inside the wallet.")(fn)
    return click.option("--wallet", "wallet_name", default="default", show_default=True, help="Wallet name.")(fn)


def ledger_option(fn):
    """--ledger: intake decisions and the publication journal live in the validator ledger (the per-user one)."""
    return _ledger_option("The validator ledger database (SQLite).")(fn)


def _package(path: str):
    """The bundle and its deterministic archive, from a bundle directory or an archive (repacked canonically)."""
    from ..bundle import pack
    from .options import note_ignored, open_bundle

    if not Path(path).is_dir():
        return (b := open_bundle(path)), pack(b)
    b, archive = package(path)
    return note_ignored(b, path), archive


def _default_archive(bundle: str, bundle_id: str) -> Path:
    """As uv and cargo do: the output goes to a folder the bundle ignores, beside its sources."""
    name = f"{bundle_id}.tar.gz"
    return Path(bundle) / OUTPUT_DIR / name if Path(bundle).is_dir() else Path(name)


@click.group("chain")
def chain() -> None:
    """Miner commitments, validator intake and weights on the Bittensor chain."""


@chain.command("package")
@bundle_argument
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Archive path (default BUNDLE/dist/<bundle_id>.tar.gz, ignored by the bundle; ./<bundle_id>.tar.gz "
    "for an archive).",
)
@json_option
def package_cmd(bundle: str, out: str | None, as_json: bool) -> None:
    """Write BUNDLE's deterministic archive and print its identity (the value to commit)."""
    b, archive = _package(bundle)
    path = Path(out or _default_archive(bundle, b.manifest.bundle_id))
    root = Path(bundle).resolve()
    inside = Path(bundle).is_dir() and path.resolve().is_relative_to(root)
    if inside and not path.resolve().is_relative_to(root / OUTPUT_DIR):
        raise InputError(
            f"--out {path}: inside the bundle, which would change it; write under {bundle}/{OUTPUT_DIR}/ "
            "or outside the bundle"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if inside and not (ignore := path.parent / ".gitignore").exists():
            ignore.write_text("*\n")  # as uv does: git leaves the outputs alone too
        path.write_bytes(archive)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None
    info = {"bundle_id": b.manifest.bundle_id, "identity": b.identity, "archive": str(path), "bytes": len(archive)}
    if as_json:
        emit_json(info)
    else:
        table("hotfloat chain package", ["bundle", "identity", "archive", "bytes"], [tuple(info.values())])


@chain.command("submit")
@bundle_argument
@click.option("--url", required=True, help="HTTPS URL where the archive from `chain package` is served.")
@click.option("--payment", default=None, help="Optional fee payment reference <block>-<index>.")
@netuid_option
@network_option
@wallet_options
@click.option("--dry-run", is_flag=True, help="Print exactly what would be posted and stop.")
@json_option
def submit_cmd(
    bundle: str,
    url: str,
    payment: str | None,
    netuid: int,
    network: str,
    wallet_name: str,
    hotkey: str,
    wallet_path: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Commit BUNDLE's identity and archive URL on the subnet, signed by the hotkey."""
    b, _ = _package(bundle)
    payload, raw = commitment(b.identity, url, payment)
    info = {"netuid": netuid, "network": network, "payload": raw.decode(), "bytes": len(raw), "dry_run": dry_run}
    if not dry_run:
        from ..chain.client import Chain, load_wallet

        wallet = load_wallet(wallet_name, hotkey, wallet_path)
        client = Chain(network)
        try:
            receipt = client.commit(netuid, raw, wallet)
        finally:
            client.close()
        info.update(hotkey=wallet.hotkey.ss58_address, extrinsic=receipt.extrinsic_id)
    if as_json:
        emit_json(info)
    elif dry_run:
        click.echo(raw.decode())
    else:
        table(
            "hotfloat chain submit",
            ["netuid", "hotkey", "extrinsic", "payload"],
            [(netuid, info["hotkey"], info["extrinsic"], info["payload"])],
        )


@chain.command("intake")
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
@json_option
def intake_cmd(
    netuid: int, network: str, ledger_path: str, deadline: float, cafile: str | None, allow_private: bool, as_json: bool
) -> None:
    """Decide every new finalized commitment: fetch, verify and enqueue it, or refuse it with a reason."""
    from ..chain.client import Chain
    from ..chain.intake import run_intake
    from ..chain.tables import open_ledger

    policy = FetchPolicy(deadline_s=deadline, cafile=cafile, allow_private=allow_private)
    client, ledger = Chain(network), open_ledger(writable_ledger(ledger_path))
    try:
        decisions = run_intake(client, ledger, netuid, policy)
    finally:
        client.close()
        ledger.close()
    if as_json:
        emit_json([d.model_dump(mode="json") for d in decisions])
        return
    table(
        "hotfloat chain intake",
        ["uid", "hotkey", "block", "identity", "outcome", "reason"],
        [(d.uid, d.hotkey, d.block, (d.identity or "")[:16], d.outcome.value, d.reason) for d in decisions],
    )


@chain.command("status")
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
        try:
            p = parse_payload(c.data)
            identity, url = p.h, p.u
        except ValueError as e:
            identity, url = None, f"({e})"
        view = seen.get((c.hotkey, c.block, digest(c.data)), ("undecided", "", None))
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


@chain.command("weights")
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


@chain.group("standin")
def standin() -> None:
    """A local stand-in chain for development and tests (no node needed)."""


@standin.command("create")
@click.argument("path", type=click.Path(dir_okay=False))
@netuid_option
@click.option(
    "--neuron",
    "neurons",
    multiple=True,
    required=True,
    help="HOTKEY_SS58[:validator] for each uid in order; ':validator' grants a validator permit.",
)
def standin_create(path: str, netuid: int, neurons: tuple[str, ...]) -> None:
    """Create a stand-in chain at PATH with one subnet and the given neurons."""
    from ..chain.standin import LocalSubstrate

    rows = [(n.split(":")[0], n.split(":")[0], n.endswith(":validator")) for n in neurons]
    LocalSubstrate.create(path, netuid, rows)
    click.echo(json.dumps({"path": path, "netuid": netuid, "uids": len(rows)}))


@standin.command("advance")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.argument("blocks", type=click.IntRange(1, 100000))
def standin_advance(path: str, blocks: int) -> None:
    """Produce BLOCKS empty blocks on the stand-in chain at PATH."""
    from bittensor.result import ChainError

    from ..chain.standin import LocalSubstrate

    try:
        click.echo(LocalSubstrate(path).advance(blocks))
    except ChainError as e:
        raise InputError(str(e)) from None
