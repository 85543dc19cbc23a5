"""The audit's settings, one record for the validator that draws them and every engine that keeps entries under
them (hotfloat.seams.audit); the key is secret and reaches an engine only over its control channel."""

from __future__ import annotations

from dataclasses import dataclass

ALWAYS = ("activation.silu_and_mul", "norm.rmsnorm", "norm.fused_add_rmsnorm")
"""Row-wise slots, audited (and so hooked) in every qualification."""
OPTIONAL = ("attention.prefill", "attention.decode")
"""Audited when the qualification names them (the candidate declares them): hooking their seams imports the
attention backend."""


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
    """Slots audited besides ALWAYS (of OPTIONAL; others are ignored)."""

    @property
    def audited(self) -> tuple[str, ...]:
        return ALWAYS + tuple(s for s in OPTIONAL if s in self.slots)

    def to_wire(self) -> dict:
        """As JSON (the key as a string: the wire bounds integers)."""
        return {k: getattr(self, k) for k in ("keep", "rows", "context", "arena_mib")} | {
            "key": str(self.key),
            "slots": list(self.slots),
        }

    @classmethod
    def from_wire(cls, d: dict | None) -> AuditConfig | None:
        return None if not d else cls(**{**d, "key": int(d["key"]), "slots": tuple(d.get("slots", ()))})
