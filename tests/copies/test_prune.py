"""copies/prune.py: dead code the file proves dead goes before hashing; code that may run stays."""

from hotfloat.copies.normalize import defined_names, normalize, parse

KERNEL = """
import torch
import torch.nn.functional as F


def gate(x, out):
    d = out.shape[-1]
    total = F.silu(x[:, :d].float()) * x[:, d:].float()
    out.copy_(total.to(out.dtype), non_blocking=False)
"""


def units(source: str) -> dict:
    tree = parse(source.encode())
    return {k: v.fingerprints for k, v in normalize(tree, defined_names([tree])).units.items()}


def test_dead_code_the_file_proves_dead_is_dropped():
    padded = KERNEL.replace(
        "    d = out.shape[-1]\n",
        "    d = out.shape[-1]\n    if False:\n        print(torch.zeros(3))\n    unused = d * 7 + 3\n    pass\n"
        "    def never(q):\n        return q * q\n    d + 1\n",
    )
    assert units(KERNEL)["gate"] == units(padded)["gate"]
    early = "def f(x):\n    return x.float() * 2\n    print(torch.ones(2).sum())\n"
    assert units(early)["f"] == units("def f(x):\n    return x.float() * 2\n")["f"]


def test_code_that_may_run_is_kept():
    opaque = KERNEL.replace(
        "    d = out.shape[-1]\n", "    d = out.shape[-1]\n    if d < 0:\n        print(torch.zeros(3))\n"
    )
    base, kept = units(KERNEL)["gate"], units(opaque)["gate"]
    assert len(kept - base) >= 3 and len(base - kept) == 1  # the branch's subtrees added; only the def's own hash moved
