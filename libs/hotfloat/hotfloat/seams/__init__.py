"""Seams: route an engine's slot calls to an armed bundle inside its declared domain, to stock code outside it.

This runs inside the (sandboxed) engine process, never in the validator: arming imports candidate code.

    router = arm_from_env()                     # HOTFLOAT_ARMED_BUNDLE=<dir> [HOTFLOAT_ARMED_IDENTITY=<sha256>]
    router = arm("path/to/bundle")              # or explicitly; arm(None) is null-armed (all calls stock)
    router = arm(None, twin_of="candidate/")    # a twin: stock, outputs in the candidate's domains nudged...
    router.set_twin_slots({"norm.rmsnorm"})     # ...once the validator enabled their slots (none by default)
    router = arm(None, audit=AuditConfig(key, slots=(...)))  # taps every call of those slots; audit.dump() a round
    y = router.silu_and_mul(x, stock=fn)        # fn(x) when the call is outside every armed op's domain
    y = router.rmsnorm(x, weight, eps, stock=fn)    # fn(x, weight, eps) outside the domain
    y, r = router.fused_add_rmsnorm(x, residual, weight, eps, stock=fn)  # two fresh outputs; fn(x, residual, weight, eps)
    y = router.call("norm.rmsnorm", fn, x, weight, eps)  # any registered slot: inputs and scalars in ABI order
    router.counts()                             # {"activation.silu_and_mul": SeamCount(routed=3, stock=1), ...}
    check_ranks_armed(router.identity)          # every rank of a distributed engine armed the same bundle

A call is routed when an op for the slot declares the tensors' dtype, the device's architecture ("cpu", "sm_90",
...) and a token count (the slot's count dim, leading dims flattened) within [min_num_tokens, max_num_tokens].
The router allocates the outputs, calls the op's entry with the slot's positional write-into-output ABI and returns
the output (a tuple of them for a slot with several) reshaped to the caller's leading dims. A bundle that fails to load raises SeamLoadError: never a silent
fallback to the stock path.
"""

from .arm import (
    ENV_ATTENTION,
    ENV_BUNDLE,
    ENV_HANDICAP,
    ENV_IDENTITY,
    ENV_TWIN_IDENTITY,
    ENV_TWIN_OF,
    arm,
    arm_from_env,
)
from .audit import AuditConfig
from .errors import RankMismatchError, SeamLoadError
from .ranks import check_ranks_armed
from .router import SeamCount, SeamRouter

__all__ = [
    "AuditConfig",
    "ENV_ATTENTION",
    "ENV_BUNDLE",
    "ENV_HANDICAP",
    "ENV_IDENTITY",
    "ENV_TWIN_IDENTITY",
    "ENV_TWIN_OF",
    "RankMismatchError",
    "SeamCount",
    "SeamLoadError",
    "SeamRouter",
    "arm",
    "arm_from_env",
    "check_ranks_armed",
]
