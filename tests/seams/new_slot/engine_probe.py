"""Run in the engine venv against the copied library: hooks every seam the registry lists for a router armed with the
bundle in argv[1] (audited), calls SGLang's real GeluAndMul layer, then judges the round's audit as the validator
does; prints what happened as one JSON line."""

import json
import sys

import torch
from sglang.srt.layers.activation import GeluAndMul
from sglang.srt.plugins.hook_registry import HookRegistry, HookType

import hotfloat
import hotfloat_sglang
from hotfloat.audit.config import AuditConfig
from hotfloat.engine.worker import audit_parts
from hotfloat.qualify.audit import audit_round
from hotfloat.seams import arm
from hotfloat_sglang.plugin import seam_hooks

SLOT = "activation.gelu_and_mul"
config = AuditConfig((1 << 62) + 7, keep=4, rows=4, slots=(SLOT,))
router = arm(sys.argv[1], audit=config)
hooks, after = seam_hooks(router)
for target, fn in hooks:
    HookRegistry.register(target, fn, HookType.AFTER if target in after else HookType.AROUND)
HookRegistry.apply_hooks()
layer, g = GeluAndMul(), torch.Generator().manual_seed(0)
x = torch.randn(6, 2 * 64, generator=g)
served = [layer.forward_native(x) for _ in range(5)]
stock = torch.nn.functional.gelu(x[:, :64], approximate="tanh") * x[:, 64:]
record = audit_round(1, "C", 0, audit_parts(router.audit.dump(), 0), config)
stats = record.slots.get(SLOT)
print(
    json.dumps(
        {
            "files": [hotfloat.__file__, hotfloat_sglang.__file__],
            "hooked": sorted(t for t, _ in hooks),
            "counts": {s: [c.routed, c.stock] for s, c in router.counts().items() if c.routed or c.stock},
            "max_diff_from_stock": float((served[-1] - stock).abs().max()),
            "audit": None if stats is None else [stats.calls_audited, stats.calls_failed],
            "audit_error": record.error,
        }
    )
)
