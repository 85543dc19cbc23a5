"""Options shared by the chain commands and `validator run --chain`: networks, subnets, wallets and the ledger are named
the same way everywhere, from one place."""

from __future__ import annotations

import click

from .options import ledger_option as _ledger_option


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
