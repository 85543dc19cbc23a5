"""`hotfloat new`: a starting bundle for one or several slots that already passes scan and verify, so an author edits
working code.

The entry's parameter list is derived from the slot spec (the same order the verifier calls it with); only the body
is written per slot, as plain torch that computes in fp32 and writes into the outputs with `copy_` (which honours
padded row strides)."""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .. import ABI_VERSION
from ..errors import InputError
from ..bundle.manifest import BUNDLE_ID
from ..slots import Role, SlotSpec, get_slot


@dataclass(frozen=True)
class Body:
    """The per-slot part of the template: the function name, the import line and the statements."""

    entry: str
    imports: str
    code: str
    graph_safe: bool = True


EXPERTS_SUM = """\
inter = w2.shape[-1]
total = torch.zeros(out.shape, dtype=torch.float32, device=out.device)
for e in topk_ids.unique().tolist():          # only the experts some token chose
    rows, k = (topk_ids == e).nonzero(as_tuple=True)
    h = x[rows].float() @ w13[e].float().T    # [n, 2I]: the gate rows, then the up rows
    y = (torch.nn.functional.silu(h[:, :inter]) * h[:, inter:]) @ w2[e].float().T
    total.index_add_(0, rows, y * topk_weights[rows, k, None])
"""
"""The routed experts' weighted sum in fp32, shared by both MoE slots' templates (the reduce slot all-reduces it)."""

BODIES: dict[str, Body] = {
    "activation.silu_and_mul": Body(
        "silu_and_mul",
        "import torch",
        """\
d = out.shape[-1]
gate, up = x[:, :d].float(), x[:, d:].float()
out.copy_(torch.nn.functional.silu(gate) * up)""",
    ),
    "norm.rmsnorm": Body(
        "rmsnorm",
        "import torch",
        """\
xf = x.float()
inv_rms = torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps)
out.copy_(xf * inv_rms * weight.float())""",
    ),
    "norm.fused_add_rmsnorm": Body(
        "fused_add_rmsnorm",
        "import torch",
        """\
total = x.float() + residual.float()          # the sum stays in fp32; residual_out rounds it once
residual_out.copy_(total)
inv_rms = torch.rsqrt(total.pow(2).mean(dim=-1, keepdim=True) + eps)
out.copy_(total * inv_rms * weight.float())""",
    ),
    "collective.all_reduce": Body(
        "all_reduce",
        "import torch.distributed as dist",
        """\
out.copy_(x)                                  # never reduce into the input: inputs are read-only
dist.all_reduce(out, op=dist.ReduceOp.SUM, group=group)""",
    ),
    "collective.ar_residual_rmsnorm": Body(
        "ar_residual_rmsnorm",
        "import torch\nimport torch.distributed as dist",
        """\
total = x.to(torch.float32, copy=True)        # reduce a copy in fp32: inputs are read-only
dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)
total += residual.float()
residual_out.copy_(total)
inv_rms = torch.rsqrt(total.pow(2).mean(dim=-1, keepdim=True) + eps)
out.copy_(total * inv_rms * weight.float())""",
    ),
    "attention.decode": Body(
        "decode",
        "import torch",
        """\
group = q.shape[1] // k_buffer.shape[1]       # query heads per KV head (GQA)
for b in range(q.shape[0]):
    pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
    k = k_buffer[pages].float().repeat_interleave(group, dim=1)      # [L, Hq, D]
    v = v_buffer[pages].float().repeat_interleave(group, dim=1)
    scores = torch.einsum("hd,lhd->hl", q[b].float(), k) * sm_scale
    out[b].copy_(torch.einsum("hl,lhd->hd", torch.softmax(scores, dim=-1), v))""",
        graph_safe=False,
    ),
    "attention.prefill": Body(
        "prefill",
        "import torch",
        """\
group = q.shape[1] // k.shape[1]              # query heads per KV head (GQA)
for b in range(qo_indptr.shape[0] - 1):
    start, end = int(qo_indptr[b]), int(qo_indptr[b + 1])                     # this request's new tokens
    pages = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()        # its cached prefix
    keys = torch.cat([k_buffer[pages], k[start:end]]).float().repeat_interleave(group, dim=1)
    vals = torch.cat([v_buffer[pages], v[start:end]]).float().repeat_interleave(group, dim=1)
    scores = torch.einsum("ehd,nhd->hen", q[start:end].float(), keys) * sm_scale
    seen = len(pages) + torch.arange(end - start, device=q.device)           # causal: up to its own place
    scores.masked_fill_(torch.arange(keys.shape[0], device=q.device) > seen[:, None], float("-inf"))
    out[start:end].copy_(torch.einsum("hen,nhd->ehd", torch.softmax(scores, dim=-1), vals))""",
        graph_safe=False,
    ),
    "moe.fused_experts": Body(
        "fused_experts",
        "import torch",
        EXPERTS_SUM + "out.copy_(total)",
        graph_safe=False,
    ),
    "moe.fused_experts_reduce": Body(
        "fused_experts_reduce",
        "import torch\nimport torch.distributed as dist",
        EXPERTS_SUM
        + "dist.all_reduce(total, op=dist.ReduceOp.SUM, group=group)  # this rank's experts' share, summed over ranks\n"
        + "out.copy_(total)",
        graph_safe=False,
    ),
}
"""One body per registered slot (a test keeps them in step with the registry and verifies each)."""


def kernel_source(slot: SlotSpec) -> str:
    """The kernel file: a docstring naming the contract, the signature from the spec, the body."""
    body = BODIES[slot.name]
    params = ", ".join(a.name for a in slot.args)
    outs = ", ".join(a.name for a in slot.of_role(Role.OUTPUT))
    code = "\n".join(f"    {line}" if line else "" for line in body.code.splitlines())
    doc = textwrap.fill(f"{slot.name}: {slot.summary}.", 100)
    call = textwrap.fill(f"Called as {slot.signature()}.", 96, subsequent_indent="    ")
    return (
        f'"""{doc}"""\n\n{body.imports}\n\n\n'
        f"def {body.entry}({params}):\n"
        f'    """Writes every element of {outs} in place and returns None.\n\n    {call}"""\n'
        f"{code}\n"
    )


def verify_commands(slot_names: list[str], directory: str) -> list[str]:
    """The verify lines for a new bundle: single-device ops in one run, each world size's collective ops across their
    ranks (never N/A on one)."""
    worlds = sorted({get_slot(name).world_size for name in slot_names})
    return [f"hotfloat verify {directory}" + (f" --world-size {w}" if w > 1 else "") for w in worlds]


def check_request(slot_names: list[str], bundle_id: str) -> None:
    """Refuses up front what the manifest or the bundle layout would refuse later: a bundle_id outside the manifest's
    pattern, an unknown slot, a slot without a template or given twice."""
    if not BUNDLE_ID.fullmatch(bundle_id):
        raise InputError(f"--id {bundle_id!r}: a bundle_id is 1-64 letters, digits, '.', '_' or '-'")
    twice = sorted({n for n in slot_names if slot_names.count(n) > 1})
    if twice:
        raise InputError(f"--slot {twice[0]} is given twice: one op per slot")
    for name in slot_names:
        if get_slot(name).name not in BODIES:
            raise InputError(f"no template for {name} yet; templates: {', '.join(sorted(BODIES))}")


def bundle_files(slot_names: list[str], bundle_id: str) -> dict[str, str]:
    """Relative path -> text of a minimal passing bundle with one op per slot in `slot_names`."""
    check_request(slot_names, bundle_id)
    slots = [get_slot(name) for name in slot_names]
    files: dict[str, str] = {}
    manifest = f'bundle_id = "{bundle_id}"\nabi_version = "{ABI_VERSION}"\n'
    for slot in slots:
        body = BODIES[slot.name]
        dtypes = ", ".join(f'"{d}"' for d in slot.dtypes)
        manifest += (
            f'\n[[ops]]\nslot = "{slot.name}"\nsource = "kernels/{body.entry}.py"\nentry = "{body.entry}"\n'
            f'variant = "default"\ndtypes = [{dtypes}]\narchitectures = ["cpu", "sm_90"]\n'
            f'metadata = "metadata/{body.entry}.json"\n'
        )
        files[f"kernels/{body.entry}.py"] = kernel_source(slot)
        files[f"metadata/{body.entry}.json"] = json.dumps({"graph_safe": body.graph_safe}) + "\n"
    single = any(slot.world_size == 1 for slot in slots)
    steps = [
        "hotfloat scan .",
        *verify_commands(slot_names, "."),
        *(["hotfloat bench ."] if single else []),
        "hotfloat chain package .",
    ]
    timed = (
        ""
        if all(slot.world_size == 1 for slot in slots)
        else "`hotfloat bench` times single-device slots; a collective op is timed in the engine by qualification.\n\n"
    )
    entries = "".join(
        f"- `{slot.name}` ({slot.summary}): `{BODIES[slot.name].entry}` in `kernels/{BODIES[slot.name].entry}.py`, "
        f"called as\n\n      {slot.signature()}\n\n"
        for slot in slots
    )
    readme = (
        f"# {bundle_id}\n\nA hotfloat bundle with one op per slot:\n\n{entries}"
        "Each entry must write every element of its outputs in place (they may have padded rows), never touch its "
        "inputs and return None. This starting point is plain torch: correct, not fast. Make it faster, then\n\n"
        + "".join(f"    {step}\n" for step in steps)
        + "\n"
        + timed
        + "Add an op later with another [[ops]] table in manifest.toml (`hotfloat new DIR --slot A --slot B` writes "
        "several at once). See docs/kernel-authors.md for the full contract.\n"
    )
    return {"manifest.toml": manifest, **files, "README.md": readme}


def write_template(directory: str | Path, slot_names: list[str], bundle_id: str | None = None) -> list[Path]:
    """Writes the template into a new or empty directory; never overwrites an author's files."""
    root = Path(directory)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(f"{root}: exists and is not an empty directory")
    bundle_id = bundle_id if bundle_id is not None else re.sub(r"[^0-9A-Za-z._-]", "-", root.resolve().name)[:64]
    files = bundle_files(slot_names, bundle_id or "my-bundle")
    written = []
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written
