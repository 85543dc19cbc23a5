"""`hotfloat chain report HOTKEY|IDENTITY`: a miner reads a validator's signed feed and sees why each of its
submissions ended where it did. The feed is fetched with the validator's own bounded HTTPS client and its signature
checked against the validator's hotkey before anything in it is shown."""

from __future__ import annotations

import click

from ..errors import ExitCode
from .output import emit_json, json_option, table

MAX_FEED_BYTES = 64 << 20


@click.command("report")
@click.argument("who", metavar="HOTKEY|IDENTITY")
@click.option("--feed", "url", required=True, help="The validator's feed, https://HOST:PORT/feed.json.")
@click.option("--validator", required=True, help="The validator's hotkey (ss58), as the metagraph lists it.")
@click.option("--cafile", type=click.Path(exists=True, dir_okay=False), help="Extra CA bundle to trust for the feed.")
@click.option("--allow-private", is_flag=True, help="Allow a feed on a private or loopback address.")
@json_option
def report_cmd(who: str, url: str, validator: str, cafile: str | None, allow_private: bool, as_json: bool) -> None:
    """Show every decided submission of HOTKEY (or of one bundle IDENTITY) in a validator's signed feed: stage, reason
    code, reason, evidence digest, scores and spent secrets. Exit 4 when the feed holds none."""
    from ..chain.feed import verify
    from ..chain.fetch import FetchPolicy, FetchRefused, fetch_body
    from ..errors import InputError

    try:
        raw = fetch_body(url, FetchPolicy(max_bytes=MAX_FEED_BYTES, cafile=cafile, allow_private=allow_private))
    except FetchRefused as e:
        raise InputError(f"feed {url}: {e.reason}") from None
    feed = verify(raw, validator)
    mine = [e for e in feed.entries if who in (e.hotkey, e.identity)]
    if as_json:
        emit_json(
            {"validator": feed.validator, "netuid": feed.netuid, "entries": [e.model_dump(mode="json") for e in mine]}
        )
    elif mine:
        table(
            f"subnet {feed.netuid}, validator {feed.validator}: signature verified",
            ["commit", "identity", "stage", "code", "score", "evidence"],
            [
                (
                    e.commit_block,
                    (e.identity or "")[:16],
                    e.stage,
                    e.code.value,
                    "" if e.scores is None or e.scores.settled is None else f"{e.scores.settled:.4f}",
                    e.evidence[:16],
                )
                for e in mine
            ],
        )
        for e in mine:
            secrets = " ".join(f"{k}={v}" for k, v in sorted(e.secrets.items()))
            click.echo(f"{(e.identity or e.hotkey)[:16]}: {e.reason}" + (f" [{secrets}]" if secrets else ""))
    if not mine:
        click.echo(f"no decided submission of {who} in the feed of {feed.validator}", err=True)
        raise SystemExit(ExitCode.NOT_APPLICABLE)
