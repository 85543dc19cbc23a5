"""Runs in the engine venv: real SGLang layers, with the hotfloat plugin loaded through SGLang's own plugin loader.

Prints one JSON line: for each case the SHA-256 of the layer's output bytes through the hooked layer and through
SGLang's original (unhooked) method on the same inputs, then the router's counts and the armed identity.
"""

import hashlib
import json

import torch
from sglang.srt.plugins import load_plugins

load_plugins()

from sglang.srt.layers.activation import SiluAndMul  # noqa: E402  (imported after the plugin patched it)
from sglang.srt.layers.layernorm import RMSNorm  # noqa: E402
from sglang.srt.server_args import ServerArgs, set_global_server_args_for_scheduler  # noqa: E402

from hotfloat_sglang.plugin import router  # noqa: E402


def digest(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


# SGLang 0.5.13's layers read the global server args when built; "dummy" skips model resolution.
set_global_server_args_for_scheduler(ServerArgs(model_path="dummy"))
g = torch.Generator().manual_seed(0)
x = torch.randn(16, 512, generator=g).to(torch.bfloat16)
norm = RMSNorm(256, eps=1e-6)
norm.weight.data = 1 + 0.1 * torch.randn(256, generator=g)
h = torch.randn(16, 256, generator=g)
res = torch.randn(16, 256, generator=g)
silu, stock_silu = SiluAndMul(), SiluAndMul.forward_native.__wrapped__


def residual_case(layer, h, res):
    """Digests of (out, residual_out) through the hooked layer and SGLang's original, and whether the hooked call
    left its inputs as they were (the fused slot returns fresh tensors)."""
    before = digest(h) + digest(res)
    hooked = layer(h, res)
    untouched = digest(h) + digest(res) == before
    original = RMSNorm.forward_native.__wrapped__(layer, h.clone(), res.clone())
    return ["".join(map(digest, hooked)), "".join(map(digest, original)), untouched]


norm16 = RMSNorm(256, eps=1e-6)
norm16.weight.data = (1 + 0.1 * torch.randn(256, generator=g)).to(torch.bfloat16)
out = {
    "silu": [digest(silu(x)), digest(stock_silu(silu, x))],
    "norm": [digest(norm(h)), digest(RMSNorm.forward_native.__wrapped__(norm, h))],
    "norm_residual": residual_case(norm, h.clone(), res.clone()),
    "norm_residual_bf16": residual_case(norm16, h.to(torch.bfloat16), res.to(torch.bfloat16)),
}
r = router()
out["identity"] = r.identity
out["counts"] = {k: [c.routed, c.stock] for k, c in r.counts().items()}
print(json.dumps(out))
