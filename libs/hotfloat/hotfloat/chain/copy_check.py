"""The intake's copy check: a fetched bundle against the reference library and every submission the intake accepted
from an earlier commit (docs/copies.md), before the ledger receives it and before any GPU work.

Earlier bundles' fingerprints are computed once from their archives in the ledger and kept in `copy_fingerprints`
(recomputed when the fingerprint version changes)."""

from __future__ import annotations

from ..bundle import Bundle, unpack
from ..copies.containment import Earlier
from ..copies.fingerprint import VERSION, Fingerprints, fingerprint
from ..copies.judge import CopyCheck, judge
from ..copies.library import reference_library
from ..errors import InputError
from ..ledger import Ledger
from .codes import Code


def check_copy(ledger: Ledger, netuid: int, bundle: Bundle, commit_block: int, hotkey: str) -> CopyCheck:
    """The verdict on `bundle`, committed at `commit_block` by `hotkey`; InputError when it is too large to compare."""
    candidate = fingerprint(bundle)
    with ledger.transaction() as db:
        rows = db.execute(
            "SELECT identity, submission_id FROM chain_observations WHERE netuid = ? AND status = 'accepted' AND"
            " hotkey != ? AND (COALESCE(commit_block, block) < ? OR (COALESCE(commit_block, block) = ? AND hotkey < ?))"
            " ORDER BY COALESCE(commit_block, block), hotkey",
            (netuid, hotkey, commit_block, commit_block, hotkey),
        ).fetchall()
    earlier = [Earlier(identity, _fingerprints(ledger, identity, sid)) for identity, sid in rows]
    check = judge(candidate, earlier, reference_library())
    _keep(ledger, bundle.identity, candidate)
    return check


def describe(check: CopyCheck, ledger: Ledger, netuid: int) -> tuple[Code, str]:
    """The code and one-line reason of a copy: `copy_of:<identity>` or `copy_of:reference:<work>/<file>` first."""
    m = check.copied
    share = f"its {m.unit} holds {m.score:.0%} of {{what}} ({m.shared} of {min(m.mine, m.their_size)} fingerprints)"
    if m.of.startswith("reference:"):
        return Code.COPY_OF_REFERENCE, f"{check.copy_of}: " + share.format(what="that file, which the project ships")
    with ledger.transaction() as db:
        row = db.execute(
            "SELECT hotkey, COALESCE(commit_block, block) FROM chain_observations WHERE netuid = ? AND identity = ?"
            " AND status = 'accepted'",
            (netuid, m.of),
        ).fetchone()
    who = f"the {m.theirs} of the bundle committed by {row[0]} at block {row[1]}" if row else f"the {m.theirs}"
    return Code.COPY_OF, f"{check.copy_of}: " + share.format(what=who)


def _fingerprints(ledger: Ledger, identity: str, sid: int | None) -> Fingerprints:
    with ledger.transaction() as db:
        row = db.execute(
            "SELECT version, fingerprints FROM copy_fingerprints WHERE identity = ?", (identity,)
        ).fetchone()
    if row is not None and row[0] == VERSION:
        return Fingerprints.model_validate_json(row[1])
    try:
        fp = fingerprint(unpack(ledger.archive(sid)))
    except InputError:  # accepted under an older fingerprint version and too large under this one: nothing to hold
        return Fingerprints(ops={}, files={}, sources={})
    _keep(ledger, identity, fp)
    return fp


def _keep(ledger: Ledger, identity: str, fp: Fingerprints) -> None:
    with ledger.transaction() as db:
        db.execute(
            "INSERT INTO copy_fingerprints (identity, version, fingerprints) VALUES (?, ?, ?) ON CONFLICT (identity)"
            " DO UPDATE SET version = excluded.version, fingerprints = excluded.fingerprints",
            (identity, fp.version, fp.model_dump_json()),
        )
