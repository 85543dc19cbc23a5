"""The audit's settings, one record for the validator that draws them and every engine that keeps entries under
them (hotfloat.seams.audit); the key is secret and reaches an engine only over its control channel."""

from __future__ import annotations

from dataclasses import dataclass

from .kinds import KINDS, MAX_CONTEXT, MAX_ROWS


@dataclass(frozen=True)
class AuditConfig:
    """The validator's audit settings, the same for every engine of a qualification; the key is secret and reaches
    an engine only over its control channel, never through its environment."""

    key: int
    keep: int = 4
    """Entries kept per stratum per round."""
    rows: int = 4
    """Rows (row-wise slots) or new tokens (prefill) per entry at most."""
    context: int = 4096
    """Context tokens an attention entry holds at most: a request with more is not kept, in any engine."""
    arena_mib: int = 512
    """Device memory reserved per GPU, before any capture, for the rings of strata first seen inside a CUDA-graph
    capture (a capture may not allocate them); a stratum past it is an audit error."""
    slots: tuple[str, ...] = ()
    """The slots whose every call runs the taps, in every engine: the candidate's declared slots that have a layout
    (`audit.kinds.KINDS`); the taps cost every engine the same, and only what the bundle can serve is judged."""

    def __post_init__(self):
        if not (1 << 32 <= self.key < 1 << 63 and 1 <= self.keep <= 64 and 1 <= self.rows <= MAX_ROWS):
            raise ValueError("audit settings out of range: key in [2^32, 2^63), keep 1-64, rows 1-64")
        if not 1 <= self.context <= MAX_CONTEXT:
            raise ValueError(f"an attention entry's context must be 1-{MAX_CONTEXT} tokens")

    @property
    def audited(self) -> tuple[str, ...]:
        return tuple(s for s in KINDS if s in self.slots)

    def to_wire(self) -> dict:
        """As JSON (the key as a string: the wire bounds integers)."""
        return {k: getattr(self, k) for k in ("keep", "rows", "context", "arena_mib")} | {
            "key": str(self.key),
            "slots": list(self.slots),
        }

    @classmethod
    def from_wire(cls, d: dict | None) -> AuditConfig | None:
        return None if not d else cls(**{**d, "key": int(d["key"]), "slots": tuple(d.get("slots", ()))})
