"""`hotfloat chain ...`: the group, the miner's commands (package and commit a bundle) and the local stand-in chain;
the validator's commands (intake, status, weights) are in chain_validator_cmd.

The bittensor SDK takes seconds to import, so modules that load it are imported inside the commands that need them
and every other `hotfloat` command stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..bundle.layout import OUTPUT_DIR
from ..chain.miner import commitment, package
from ..errors import InputError
from .chain_options import netuid_option, network_option, wallet_options
from .chain_validator_cmd import intake_cmd, status_cmd, weights_cmd
from .options import bundle_argument
from .output import emit_json, json_option, table


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


@click.group("chain", commands=[intake_cmd, status_cmd, weights_cmd])
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
    else:  # lines, not a table: the identity to commit prints whole at any terminal width
        click.echo("\n".join(f"{key:<9} {value}" for key, value in info.items()))


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
