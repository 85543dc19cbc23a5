"""The chain layer's tables in the validator ledger database, added by named migrations of their own.

`chain_observations` remembers every commitment the intake decided on (so a commitment seen again is a replay, not
new work) and, through unique indexes over accepted rows, gives each bundle identity and each fee payment reference
to one commitment only; `weight_publications` is the journal
that takes one weight vector through intent -> sent -> confirmed (or expired / failed).
"""

from __future__ import annotations

from ..ledger import Ledger, Migration
from ..validator.evidence import EVIDENCE

CHAIN_MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        "chain_0001_intake",
        (
            """CREATE TABLE chain_observations (
            netuid INTEGER NOT NULL,
            hotkey TEXT NOT NULL,
            block INTEGER NOT NULL,
            digest TEXT NOT NULL,
            uid INTEGER,
            identity TEXT,
            url TEXT,
            payment TEXT,
            status TEXT NOT NULL,
            reason TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            submission_id INTEGER,
            decided_at REAL NOT NULL,
            PRIMARY KEY (netuid, hotkey, block, digest))""",
            "CREATE UNIQUE INDEX chain_claims ON chain_observations(netuid, identity) WHERE status = 'accepted'",
            "CREATE UNIQUE INDEX chain_payments ON chain_observations(netuid, payment) WHERE status = 'accepted'",
        ),
    ),
    Migration(
        "chain_0002_weight_publications",
        (
            """CREATE TABLE weight_publications (
            netuid INTEGER NOT NULL,
            round TEXT NOT NULL,
            hotkey TEXT NOT NULL,
            weights TEXT NOT NULL,
            u16 TEXT NOT NULL,
            state TEXT NOT NULL,
            sent_at INTEGER,
            extrinsic_id TEXT,
            reason TEXT NOT NULL DEFAULT '',
            updated_at REAL NOT NULL,
            PRIMARY KEY (netuid, round))""",
        ),
    ),
)


def open_ledger(path: str) -> Ledger:
    """The validator ledger with the chain tables migrated in, its transitions' evidence read as the stages' records."""
    return Ledger(path, migrations=CHAIN_MIGRATIONS, evidence=EVIDENCE)
