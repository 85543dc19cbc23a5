"""The correctness-gate ladder of issue 32: bundles whose kernels are wrong by a known, deterministic amount.

    python tools/device/ladder/make.py OUT_DIR [--after N]

writes one bundle directory per rung under OUT_DIR (the H200 run: tools/device/ladder.sh):

- silu_rel_<p>, fused_rel_<p> (p = 0.1, 0.5, 1, 3 percent): activation.silu_and_mul, or norm.fused_add_rmsnorm's
  `out` (its residual_out exact), equal to the fp32 result times 1 +- p%, the sign a fixed-seed hash of the
  element's index (the same every call, no RNG state), then rounded to the output dtype;
- silu_rows_1pct: silu exact except on about 1% of rows (picked by a hash of the row's first input and its index,
  so different rows every call), which are 25% off;
- silu_after_n / silu_after_n_sparse: silu exact for its first N calls (a device counter the kernel bumps with a
  captured op, so it counts CUDA-graph replays too), then 25% off on every element / 0.25 off on one element in
  1024 (beyond the bf16 verify tolerance, and small for the gate);
- silu_1pct_with_fused: silu_rel_1's kernel plus the accurate Triton fused_add_rmsnorm of
  examples/fused_add_rmsnorm_triton as a second op, so the twin must not widen silu's allowance.

Kernels are plain torch tensor ops (capture-safe: no host sync, no allocation outside torch); each module keeps its
counter from the first call, which the engines make eagerly (warm-up) before any capture. Domains are the examples':
bf16/fp16/fp32 on cpu and sm_90, graph_safe.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
HASH = '''
def _hash(i):
    """A 31-bit fixed-seed hash of non-negative int64 values (elementwise, capture-safe)."""
    h = (i * 0x2545F491 + 0x3C6EF372) & 0x7FFFFFFF
    h = ((h ^ (h >> 15)) * 0x5BD1E995) & 0x7FFFFFFF
    return h ^ (h >> 13)


def _sign(y):
    """+1 or -1 per element of y, from its index."""
    return (_hash(torch.arange(y.numel(), device=y.device)) & 1).float().view(y.shape) * 2 - 1


def _silu(x):
    d = x.shape[1] // 2
    return torch.nn.functional.silu(x[:, :d].float()) * x[:, d:].float()
'''
SILU_REL = """
def silu_and_mul(x, out):
    y = _silu(x)
    out.copy_(y * (1 + REL * _sign(y)))
"""
FUSED_REL = """
def fused_add_rmsnorm(x, residual, weight, out, residual_out, eps):
    s = x.float() + residual.float()
    residual_out.copy_(s)
    y = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    out.copy_(y * (1 + REL * _sign(y)))
"""
SILU_ROWS = """
def silu_and_mul(x, out):
    y = _silu(x)
    rows = torch.arange(x.shape[0], device=x.device)
    key = (x[:, 0].float().abs() * 65536).clamp(max=2.0 ** 40).long() ^ rows
    wrong = (_hash(key) % 100 == 0)[:, None]
    out.copy_(torch.where(wrong, y * 1.25, y))
"""
SILU_AFTER = """
_calls = None


def silu_and_mul(x, out):
    global _calls
    if _calls is None:
        _calls = torch.zeros(1, dtype=torch.int64, device=x.device)
    _calls.add_(1)
    y = _silu(x)
    out.copy_(torch.where(_calls > AFTER, WRONG, y))
"""
GROSS = "y * (1 + 0.25 * _sign(y))"
SPARSE = "y + 0.25 * (_hash(torch.arange(y.numel(), device=y.device)).view(y.shape) % 1024 == 0)"
MANIFEST = """bundle_id = "{name}"
abi_version = "hotfloat-op-abi-v1"
"""
OP = """
[[ops]]
slot = "{slot}"
source = "kernels/{source}"
entry = "{entry}"
kind = "python"
dtypes = ["bf16", "fp16", "fp32"]
architectures = ["cpu", "sm_90"]
metadata = "metadata/graph.json"
"""
SILU, FUSED = ("activation.silu_and_mul", "silu_and_mul"), ("norm.fused_add_rmsnorm", "fused_add_rmsnorm")


def kernel(doc: str, body: str, **consts) -> str:
    head = "".join(f"{k} = {v}\n" for k, v in consts.items())
    return f'"""{doc}"""\n\nimport torch\n\n{head}{HASH}{body}'


def write(root: Path, name: str, ops: list[tuple[tuple[str, str], str, str]]) -> Path:
    """A bundle of `ops`, each ((slot, entry), kernel file name, source)."""
    d = root / name
    shutil.rmtree(d, ignore_errors=True)
    (d / "kernels").mkdir(parents=True)
    (d / "metadata").mkdir()
    (d / "metadata" / "graph.json").write_text('{"graph_safe": true}\n')
    manifest = MANIFEST.format(name=name)
    for (slot, entry), source, text in ops:
        (d / "kernels" / source).write_text(text)
        manifest += OP.format(slot=slot, source=source, entry=entry)
    (d / "manifest.toml").write_text(manifest)
    return d


def make(root: Path, after: int = 20000) -> list[Path]:
    """Writes every rung under `root`; returns their directories."""
    out = []
    for p in (0.1, 0.5, 1, 3):
        tag = str(p).replace(".", "_")
        silu = kernel(f"silu_and_mul times 1 +- {p}% (issue 32's ladder).", SILU_REL, REL=p / 100)
        out.append(write(root, f"silu_rel_{tag}", [(SILU, "silu.py", silu)]))
        fused = kernel(
            f"fused_add_rmsnorm with out times 1 +- {p}%, residual_out exact (issue 32's ladder).",
            FUSED_REL,
            REL=p / 100,
        )
        out.append(write(root, f"fused_rel_{tag}", [(FUSED, "fused.py", fused)]))
    out.append(
        write(root, "silu_rows_1pct", [(SILU, "silu.py", kernel("silu_and_mul 25% off on ~1% of rows.", SILU_ROWS))])
    )
    for name, wrong in (("silu_after_n", GROSS), ("silu_after_n_sparse", SPARSE)):
        text = kernel(
            f"silu_and_mul exact for {after} calls, then {wrong}.", SILU_AFTER.replace("WRONG", wrong), AFTER=after
        )
        out.append(write(root, name, [(SILU, "silu.py", text)]))
    triton_fused = (REPO / "examples/fused_add_rmsnorm_triton/kernels/fused_add_rmsnorm.py").read_text()
    silu = kernel("silu_and_mul times 1 +- 1% (issue 32's ladder).", SILU_REL, REL=0.01)
    out.append(write(root, "silu_1pct_with_fused", [(SILU, "silu.py", silu), (FUSED, "fused.py", triton_fused)]))
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--after", type=int, default=20000, help="calls the silu_after_n kernels stay exact for")
    args = ap.parse_args()
    for d in make(args.out, args.after):
        print(d)
