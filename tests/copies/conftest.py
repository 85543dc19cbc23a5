"""Bundles for the copy tests, written here: a Triton-free plain-torch kernel with helpers, enough code to be judged."""

import pytest

KERNEL = '''"""Row-blocked RMSNorm with a separate scale step."""
import torch

ROWS = 32


def _inv_rms(block, eps):
    squares = block.pow(2)
    return torch.rsqrt(squares.mean(dim=-1, keepdim=True) + eps)


def _scale(block, weight, inv):
    return block * inv * weight.float()


def rmsnorm(x, weight, out, eps=1e-6):
    rows = x.shape[0]
    for lo in range(0, rows, ROWS):
        hi = min(lo + ROWS, rows)
        block = x[lo:hi].float()
        inv = _inv_rms(block, eps)
        out[lo:hi].copy_(_scale(block, weight, inv).clamp(-65504.0, 65504.0).to(out.dtype))
        if hi - lo < ROWS and torch.isnan(out[lo:hi]).any():
            out[lo:hi].zero_()
    return None
'''
MANIFEST = (
    'bundle_id = "{id}"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "norm.rmsnorm"\n'
    'source = "kernels/{src}"\nentry = "rmsnorm"\ndtypes = ["fp32"]\narchitectures = ["cpu"]\n'
)


@pytest.fixture
def kernel() -> str:
    """A plain-torch rmsnorm with two helpers and enough code to be judged."""
    return KERNEL


@pytest.fixture
def kernel_files():
    """(files of a bundle as path -> bytes, ops) for one kernel source and bundle id."""

    def make(source: str = KERNEL, bundle_id: str = "rows", extra: dict | None = None, src: str = "norm.py"):
        files = {"manifest.toml": MANIFEST.format(id=bundle_id, src=src).encode(), f"kernels/{src}": source.encode()}
        files.update({k: v.encode() for k, v in (extra or {}).items()})
        return files

    return make
