"""The explicit slot registry: a name resolves to exactly one slot, or an error that lists the known ones."""

from ..errors import UnknownSlotError
from .activation import SILU_AND_MUL
from .ar_rmsnorm import AR_RESIDUAL_RMSNORM
from .attention import ATTENTION_DECODE
from .collective import ALL_REDUCE
from .fused_norm import FUSED_ADD_RMSNORM
from .moe import MOE_FUSED_EXPERTS, MOE_FUSED_EXPERTS_REDUCE
from .norm import RMSNORM
from .prefill import ATTENTION_PREFILL
from .spec import SlotSpec

SLOTS: dict[str, SlotSpec] = {
    s.name: s
    for s in (
        SILU_AND_MUL,
        RMSNORM,
        FUSED_ADD_RMSNORM,
        ALL_REDUCE,
        AR_RESIDUAL_RMSNORM,
        ATTENTION_DECODE,
        ATTENTION_PREFILL,
        MOE_FUSED_EXPERTS,
        MOE_FUSED_EXPERTS_REDUCE,
    )
}


def get_slot(name: str) -> SlotSpec:
    """Resolves a slot name from untrusted input."""
    try:
        return SLOTS[name]
    except (KeyError, TypeError):
        raise UnknownSlotError(f"unknown slot {name!r}; known slots: {', '.join(sorted(SLOTS))}") from None
