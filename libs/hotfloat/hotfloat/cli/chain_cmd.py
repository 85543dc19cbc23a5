"""`hotfloat chain ...`: the group, the miner's commands (package a bundle, commit its digest, reveal it) and the local
stand-in chain; the validator's commands (intake, status, weights) are in chain_validator_cmd, the miner's report in
chain_report_cmd.

The bittensor SDK takes seconds to import, so modules that load it are imported inside the commands that need them
and every other `hotfloat` command stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from ..bundle.layout import OUTPUT_DIR
from ..chain.miner import Sealed, package, reveal_bytes, seal
from ..errors import InputError
from .chain_options import netuid_option, network_option, wallet_options
from .chain_report_cmd import report_cmd
from .chain_validator_cmd import intake_cmd, status_cmd, weights_cmd
from .options import bundle_argument, read_input, scanned
from .output import emit_json, json_option, table

REVEAL_AFTER = 10
"""Validators' default reveal delay (`validator run --reveal-after`)."""


def _package(path: str):
    """The bundle and its deterministic archive, from a bundle directory or an archive (repacked canonically); a
    bundle scan refuses is refused here, with scan's line, so it can never be committed."""
    from ..bundle import pack
    from .options import note_ignored, open_bundle

    if not Path(path).is_dir():
        b = scanned(open_bundle(path), path)
        return b, pack(b)
    b, archive = package(path)
    return scanned(note_ignored(b, path), path), archive


def _default_output(bundle: str, bundle_id: str, suffix: str) -> Path:
    """As uv and cargo do: the output goes to a folder the bundle ignores, beside its sources."""
    name = f"{bundle_id}{suffix}"
    return Path(bundle) / OUTPUT_DIR / name if Path(bundle).is_dir() else Path(name)


def _write(path: Path, data: bytes, bundle: str, flag: str, private: bool = False) -> None:
    """Writes an output, never inside the bundle's sources (that would change it) and never over a symlink."""
    root = Path(bundle).resolve()
    inside = Path(bundle).is_dir() and path.resolve().is_relative_to(root)
    if inside and not path.resolve().is_relative_to(root / OUTPUT_DIR):
        raise InputError(
            f"{flag} {path}: inside the bundle, which would change it; write under {bundle}/{OUTPUT_DIR}/ "
            "or outside the bundle"
        )
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if inside and not (ignore := path.parent / ".gitignore").exists():
            ignore.write_text("*\n")  # as uv does: git leaves the outputs alone too
        tmp = path.with_name(path.name + ".tmp")
        tmp.unlink(missing_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None


@click.group("chain", commands=[intake_cmd, status_cmd, weights_cmd, report_cmd])
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
    """Write BUNDLE's deterministic archive and print its identity (the value to commit); exit 1 with scan's line
    when scan refuses the bundle."""
    b, archive = _package(bundle)
    path = Path(out or _default_output(bundle, b.manifest.bundle_id, ".tar.gz"))
    _write(path, archive, bundle, "--out")
    info = {"bundle_id": b.manifest.bundle_id, "identity": b.identity, "archive": str(path), "bytes": len(archive)}
    if as_json:
        emit_json(info)
    else:  # lines, not a table: the identity to commit prints whole at any terminal width
        click.echo("\n".join(f"{key:<9} {value}" for key, value in info.items()))


@chain.command("submit")
@bundle_argument
@click.option("--url", required=True, help="HTTPS URL where the archive from `chain package` is served.")
@click.option("--payment", default=None, help="Optional fee payment reference <block>-<index>.")
@click.option(
    "--reveal-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Where to keep the secret reveal (default BUNDLE/dist/<bundle_id>.reveal.json; ./<bundle_id>.reveal.json "
    "for an archive).",
)
@netuid_option
@network_option
@wallet_options
@click.option("--dry-run", is_flag=True, help="Print the reveal that would follow the commit, and stop.")
@json_option
def submit_cmd(
    bundle: str,
    url: str,
    payment: str | None,
    reveal_file: str | None,
    netuid: int,
    network: str,
    wallet_name: str,
    hotkey: str,
    wallet_path: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Commit the digest of BUNDLE's identity and archive URL on the subnet, signed by the hotkey, and keep the
    reveal in a private file for `hotfloat chain reveal`: the URL stays secret until then."""
    b, _ = _package(bundle)
    if dry_run:
        sealed = seal(b.identity, url, netuid, "(your hotkey)", payment)
        raw = reveal_bytes(sealed, 0).decode()
        if as_json:
            emit_json({"netuid": netuid, "reveal": raw, "dry_run": True})
        else:
            click.echo(raw)
            click.echo(
                "the digest of this reveal, bound to your hotkey, is committed first; c becomes its block", err=True
            )
        return
    from ..chain.client import Chain, load_wallet

    wallet = load_wallet(wallet_name, hotkey, wallet_path)
    sealed = seal(b.identity, url, netuid, wallet.hotkey.ss58_address, payment)
    path = Path(reveal_file or _default_output(bundle, b.manifest.bundle_id, ".reveal.json"))
    _write(path, sealed.model_dump_json(indent=1).encode(), bundle, "--reveal-file", private=True)  # before it leaves
    client = Chain(network)
    try:
        block = client.commit_digest(netuid, sealed.digest, wallet)
    finally:
        client.close()
    sealed = sealed.model_copy(update={"commit_block": block})
    _write(path, sealed.model_dump_json(indent=1).encode(), bundle, "--reveal-file", private=True)
    info = {
        "netuid": netuid,
        "hotkey": sealed.hotkey,
        "identity": b.identity,
        "digest": sealed.digest,
        "commit_block": block,
        "reveal_file": str(path),
        "reveal_from": block + REVEAL_AFTER,
    }
    if as_json:
        emit_json(info)
    else:
        click.echo("\n".join(f"{key:<12} {value}" for key, value in info.items()))
        click.echo(f"next: hotfloat chain reveal {path} --network {network} at block {block + REVEAL_AFTER} or later")


@chain.command("reveal")
@click.argument("reveal_file", type=click.Path(dir_okay=False))
@network_option
@wallet_options
@click.option(
    "--after",
    type=click.IntRange(1, 250),
    default=REVEAL_AFTER,
    show_default=True,
    help="Refuse locally to reveal sooner than this many blocks after the commit (validators refuse it).",
)
@json_option
def reveal_cmd(
    reveal_file: str, network: str, wallet_name: str, hotkey: str, wallet_path: str | None, after: int, as_json: bool
) -> None:
    """Reveal the commitment kept in REVEAL_FILE (written by `chain submit`): its identity, URL and salt go on chain."""
    from pydantic import ValidationError

    from ..chain.client import Chain, load_wallet
    from ..record import first_error

    try:
        sealed = Sealed.model_validate_json(read_input(reveal_file, 1 << 16, "reveal file"))
    except ValidationError as e:
        raise InputError(f"{reveal_file}: not a reveal file ({first_error(e)})") from None
    if sealed.commit_block is None:
        raise InputError(
            f"{reveal_file}: its digest was never committed (no commit block); run `hotfloat chain submit`"
        )
    wallet = load_wallet(wallet_name, hotkey, wallet_path)
    if wallet.hotkey.ss58_address != sealed.hotkey:
        raise InputError(
            f"{reveal_file} opens {sealed.hotkey}'s digest; this wallet's hotkey is {wallet.hotkey.ss58_address}"
        )
    raw = reveal_bytes(sealed, sealed.commit_block)
    client = Chain(network)
    try:
        head = client.head()
        if head + 1 < sealed.commit_block + after:
            raise InputError(
                f"too early: the head is at block {head}; reveal at block {sealed.commit_block + after} or later "
                f"({after} blocks after the commit at block {sealed.commit_block})"
            )
        block = client.reveal(sealed.netuid, raw, wallet)
    finally:
        client.close()
    info = {"netuid": sealed.netuid, "hotkey": sealed.hotkey, "commit_block": sealed.commit_block, "revealed_at": block}
    if as_json:
        emit_json(info | {"reveal": raw.decode()})
    else:
        table("hotfloat chain reveal", list(info), [tuple(info.values())])


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
