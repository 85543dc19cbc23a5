"""What tools/device/bench_sweep.py sweeps: the three example kernels, their shapes and config variants, the inputs of
one call and the bytes it must move, the call itself, its error against torch in fp32, and the configs worth timing at
a shape."""

import importlib.util
import math
import os

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SM = 132
DECODE = [(t, h) for h in (2880, 4096, 8192) for t in (1, 8, 32, 128)]
OPS = {
    "silu": {
        "path": "examples/silu_triton/kernels/silu_and_mul.py",
        "shapes": DECODE + [(1024, 4096), (4096, 8192), (8192, 8192)],
        # (BLOCK_T, BLOCK_D, warps, 1-D memory-order grid)
        "variants": [
            (1, 256, 1, 0),
            (1, 256, 2, 0),
            (1, 512, 2, 0),
            (1, 512, 4, 0),
            (1, 1024, 4, 0),
            (1, 1024, 8, 0),
            (1, 2048, 8, 0),
            (2, 1024, 8, 0),
            (2, 2048, 16, 0),
            (1, 4096, 8, 0),
            (1, 4096, 16, 0),
            (1, 4096, 16, 1),
            (1, 2048, 8, 1),
            (1, 1024, 8, 1),
        ],
    },
    "rmsnorm": {
        "path": "examples/rmsnorm_triton/kernels/rmsnorm.py",
        "shapes": DECODE + [(1024, 4096), (4096, 8192), (8192, 8192)],
        "variants": [
            (1, 1, 0),
            (1, 2, 0),
            (1, 4, 0),
            (1, 8, 0),
            (1, 16, 0),
            (2, 4, 0),
            (2, 8, 0),
            (4, 8, 0),
            (4, 16, 0),
            (1, 4, 4 * SM),
            (1, 8, 2 * SM),
            (2, 8, 2 * SM),
        ],
    },
    "fused": {
        "path": "examples/fused_add_rmsnorm_triton/kernels/fused_add_rmsnorm.py",
        "shapes": sorted(
            {(t, h) for h in (896, 1536, 4096, 8192) for t in (1, 8, 32, 128, 256)}
            | set(DECODE)
            | {(4096, 4096), (8192, 8192)},
            key=lambda s: (s[1], s[0]),
        ),
        "variants": [
            (1, 1, 0),
            (1, 2, 0),
            (1, 4, 0),
            (1, 8, 0),
            (1, 16, 0),
            (2, 4, 0),
            (2, 8, 0),
            (4, 8, 0),
            (4, 16, 0),
            (1, 4, 4 * SM),
            (1, 8, 2 * SM),
            (2, 8, 2 * SM),
        ],
    },
}


def load(name):
    spec = importlib.util.spec_from_file_location(f"sweep_{name}", os.path.join(ROOT, OPS[name]["path"]))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def make(name, t, h, dev="cuda"):
    """Inputs and poisoned outputs of one call; bytes that must move."""
    bf = torch.bfloat16
    if name == "silu":
        return {
            "x": torch.randn(t, 2 * h, device=dev, dtype=bf),
            "out": torch.full((t, h), float("nan"), device=dev, dtype=bf),
        }, 6 * t * h
    d = {
        "x": torch.randn(t, h, device=dev, dtype=bf),
        "w": (1 + 0.1 * torch.randn(h, device=dev)).to(bf),
        "out": torch.full((t, h), float("nan"), device=dev, dtype=bf),
    }
    if name == "rmsnorm":
        return d, (4 * t * h + 2 * h)
    d |= {"r": torch.randn(t, h, device=dev, dtype=bf), "rout": torch.full((t, h), float("nan"), device=dev, dtype=bf)}
    return d, (8 * t * h + 2 * h)


def call(mod, name, s, cfg, pdl):
    if name == "silu":
        mod.launch(s["x"], s["out"], cfg, pdl)
    elif name == "rmsnorm":
        mod.launch(s["x"], s["w"], s["out"], 1e-6, cfg, pdl)
    else:
        mod.launch(s["x"], s["r"], s["w"], s["out"], s["rout"], 1e-6, cfg, pdl)


def error(name, s):
    """Max relative error (max |out - ref| / max |ref|) of the set's outputs against torch in fp32: a broken config
    must not win; bf16 rounding alone stays under 0.4% (0.8% where the interpreter truncates)."""
    x = s["x"].float()
    pairs = []
    if name == "silu":
        h = x.shape[1] // 2
        pairs.append((s["out"], torch.nn.functional.silu(x[:, :h]) * x[:, h:]))
    else:
        if name == "fused":
            x = x + s["r"].float()
            pairs.append((s["rout"], x))
        pairs.append((s["out"], x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * s["w"].float()))
    return max(((o.float() - r).abs().max() / r.abs().max()).item() for o, r in pairs)


def configs(name, mod, t, h):
    """(label, cfg, pdl) to time at one shape: every variant with PDL, and the example's default config with and
    without PDL."""
    default = tuple(mod._config(t, h, True))
    out, seen = [("default", default, True), ("default-nopdl", default, False)], {_effective(name, t, h, default)}
    for v in map(tuple, OPS[name]["variants"]):
        key = _effective(name, t, h, v)
        if key not in seen:  # a persistent grid at least as large as the work is the plain launch: time it once
            seen.add(key)
            out.append(("/".join(map(str, v)), v, True))
    return out


def _effective(name, t, h, cfg):
    """The launch a config makes at this shape: the persistent grid size drops out when it covers every tile."""
    if name == "silu":
        return tuple(map(int, cfg))
    bt, w, p = cfg
    return bt, w, p if 0 < p < math.ceil(t / bt) else 0
