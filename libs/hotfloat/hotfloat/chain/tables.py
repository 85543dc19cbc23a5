"""The chain layer's tables in the validator ledger database, added by named migrations of their own.

`chain_observations` remembers every commitment the intake decided on (so a commitment seen again is a replay, not
new work), with the block of the digest it revealed (the chain order), its reason code and the copy check's evidence,
and through unique indexes over accepted rows gives each bundle identity and each fee payment reference to one
commitment only; `copy_fingerprints` keeps each taken-in bundle's fingerprints for the copy checks of later ones;
`weight_publications` is the journal that takes one weight vector through intent -> sent -> confirmed (or expired /
failed).
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
    Migration(
        "chain_0003_reveals_codes_copies",
        (
            "ALTER TABLE chain_observations ADD COLUMN commit_block INTEGER",
            "ALTER TABLE chain_observations ADD COLUMN code TEXT NOT NULL DEFAULT ''",
            "ALTER TABLE chain_observations ADD COLUMN evidence TEXT",
            # refusals decided before codes existed, classified by the reasons the intake wrote then
            """UPDATE chain_observations SET code = CASE
            WHEN reason LIKE 'hotkey is not registered%' THEN 'not_registered'
            WHEN reason LIKE 'duplicate identity%' THEN 'duplicate_identity'
            WHEN reason LIKE 'replay%' THEN 'replay'
            WHEN reason LIKE 'fault while deciding%' THEN 'fault'
            WHEN reason LIKE '%payload%' THEN 'malformed'
            ELSE 'fetch_refused' END WHERE status = 'refused'""",
            """CREATE TABLE copy_fingerprints (
            identity TEXT PRIMARY KEY,
            version INTEGER NOT NULL,
            fingerprints TEXT NOT NULL)""",
        ),
    ),
)


def open_ledger(path: str) -> Ledger:
    """The validator ledger with the chain tables migrated in, its transitions' evidence read as the stages' records."""
    return Ledger(path, migrations=CHAIN_MIGRATIONS, evidence=EVIDENCE)
