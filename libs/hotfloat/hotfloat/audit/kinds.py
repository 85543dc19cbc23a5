"""Which slots the audit keeps entries of, and its bounds: torch-free, so that the validator's light commands (the
audit's config, the protocol) read them without the layout's tensor code."""

KINDS = {
    "activation.silu_and_mul": "rowwise",
    "norm.rmsnorm": "rowwise",
    "norm.fused_add_rmsnorm": "rowwise",
    "attention.prefill": "prefill",
    "attention.decode": "decode",
}
"""Every slot the audit keeps entries of, and how; a routed call of any other slot is one no audit can see."""
ROWWISE = tuple(s for s, k in KINDS.items() if k == "rowwise")
MAX_ROWS = 64
MAX_CONTEXT = 1 << 16
