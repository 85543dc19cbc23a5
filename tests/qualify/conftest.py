"""Bundles for the qualification tests: an exact-math torch silu, a subtly broken one, one that raises, one that
declares no CPU support (so it never runs here)."""

from pathlib import Path

import pytest

EXACT = """
import torch

def run(x, out):
    d = x.shape[-1] // 2
    out.copy_(torch.nn.functional.silu(x[:, :d]) * x[:, d:])
"""
BROKEN = EXACT.replace("x[:, d:])", "x[:, d:] * 1.01)")
RAISES = "def run(x, out):\n    raise ZeroDivisionError('kernel bug')\n"
GPU_ONLY = """bundle_id = "gpu-only"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
architectures = ["sm_90"]
"""


@pytest.fixture(scope="session")
def bundles(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("qualify-bundles")
    out = {}
    for name, kernel, manifest in (
        ("exact", EXACT, None),
        ("broken", BROKEN, None),
        ("raises", RAISES, None),
        ("gpu_only", EXACT, GPU_ONLY),
    ):
        d = root / name
        (d / "kernels").mkdir(parents=True)
        (d / "kernels" / "k.py").write_text(kernel)
        (d / "manifest.toml").write_text(
            manifest
            or (
                f'bundle_id = "{name}"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\n'
                'slot = "activation.silu_and_mul"\nsource = "kernels/k.py"\nentry = "run"\n'
            )
        )
        out[name] = d
    return out
