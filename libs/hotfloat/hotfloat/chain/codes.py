"""The closed list of reason codes a miner's report carries, one per way a submission can be decided.

Every decided submission gets exactly one code, with the one-line reason beside it: the code is for machines (a
miner's script, a dashboard), the reason for people. docs/chain.md, "Reason codes", documents each; a test keeps
that table equal to this list. A new way to decide means a new code here, never a reused one.
"""

from __future__ import annotations

from enum import Enum


class Code(str, Enum):
    """Why a submission ended where it did."""

    NOT_REGISTERED = "not_registered"
    """The committing hotkey holds no uid on the subnet."""
    MALFORMED = "malformed"
    """The commitment's bytes are not a reveal: oversize, not UTF-8 JSON, unknown keys, non-canonical, bad URL."""
    PLAIN_COMMITMENT = "plain_commitment"
    """A version-1 payload: the URL was committed in the clear, without a digest first."""
    NO_COMMIT = "no_commit"
    """The hotkey's commitment before the reveal is not a digest committed at the block the reveal names."""
    REVEAL_MISMATCH = "reveal_mismatch"
    """The reveal does not hash to the digest the hotkey committed."""
    REVEAL_FOREIGN = "reveal_foreign"
    """The reveal opens another hotkey's digest: someone else's reveal, re-posted."""
    REVEAL_REPLAYED = "reveal_replayed"
    """That digest was already revealed; the same reveal posted again."""
    REVEAL_EARLY = "reveal_early"
    """Revealed fewer blocks after the commit than the validator's reveal delay."""
    REVEAL_LATE = "reveal_late"
    """Revealed more blocks after the commit than the validator's reveal window."""
    DUPLICATE_IDENTITY = "duplicate_identity"
    """The bundle identity was committed first by another hotkey."""
    REPLAY = "replay"
    """This hotkey's identity, or the fee payment reference, was already accepted once."""
    FETCH_REFUSED = "fetch_refused"
    """The archive could not be fetched within the bounds, or is not a bundle of the committed identity."""
    UNCOMPARABLE = "uncomparable"
    """Too much code to compare with earlier bundles."""
    COPY_OF = "copy_of"
    """A copy of an earlier submission (the reason names it: `copy_of:<identity>`)."""
    COPY_OF_REFERENCE = "copy_of_reference"
    """A copy of code the project ships (`copy_of:reference:<work>/<file>`)."""
    FAULT = "fault"
    """The validator failed to decide it, repeatedly; never the miner's fault, never retried again."""
    SCAN_REFUSED = "scan_refused"
    """The static scan refused the code (the reason is scan's first finding)."""
    BUILD_FAILED = "build_failed"
    """The kernels did not compile."""
    VERIFY_FAILED = "verify_failed"
    """Admission's hostile verifier failed an op (wrong values, unwritten output, mutated input, a crash ...)."""
    QUALIFY_FAILED = "qualify_failed"
    """The complete engine with the bundle was not shown faster, or its tokens or logprobs differed."""
    NO_DECISION = "no_decision"
    """A stage could not decide (infrastructure faults, a baseline that disagreed with itself): no loss."""
    SCORED = "scored"
    """Qualified twice and settled: the score is in the report."""


STAGE_FAILURES = {
    "scan": Code.SCAN_REFUSED,
    "build": Code.BUILD_FAILED,
    "admit": Code.VERIFY_FAILED,
    "qualify": Code.QUALIFY_FAILED,
    "score": Code.QUALIFY_FAILED,
}
"""The code of a FAILED submission by the pipeline stage that failed it."""
