"""Which slots the audit keeps entries of, and its bounds: read from each slot's `audit` site (hotfloat.slots), and
torch-free, so that the validator's light commands (the audit's config, the protocol) read them without the layout's
tensor code."""

from ..slots import SLOTS

KINDS = {name: spec.audit.kind for name, spec in SLOTS.items() if spec.audit is not None}
"""Every slot the audit keeps entries of, and how; a routed call of any other slot is one no audit can see."""
ROWWISE = tuple(s for s, k in KINDS.items() if k == "rowwise")
MAX_ROWS = 64
MAX_CONTEXT = 1 << 16
