"""copies/normalize.py: what the normalization erases (names, layout, constants, operand and keyword order, dead code)
and what it keeps (the computation), and that hostile files neither crash nor recurse it."""

import ast

from hotfloat.copies.normalize import Hasher, defined_names, normalize, parse

KERNEL = '''
"""A docstring."""
import torch
import torch.nn.functional as F

BLOCK = 64


def gate(x, out):
    """Writes silu(x[:, :d]) * x[:, d:]."""
    d = out.shape[-1]
    total = F.silu(x[:, :d].float()) * x[:, d:].float()
    out.copy_(total.to(out.dtype), non_blocking=False)
'''
RENAMED = """
import torch.nn.functional
import torch as tt

LIMIT = 128

def gate(inp, res):
    # a comment
    half = res.shape[ -1 ]
    acc = inp[:, half:].float() * torch.nn.functional.silu(inp[:, :half].float())
    res.copy_(acc.to(res.dtype), non_blocking = True)
"""


def units(source: str) -> dict:
    tree = parse(source.encode())
    return {k: v.fingerprints for k, v in normalize(tree, defined_names([tree])).units.items()}


def test_names_layout_docstrings_constants_and_operand_order_are_erased():
    assert units(KERNEL)["gate"] == units(RENAMED)["gate"]


def test_a_different_computation_keeps_different_fingerprints():
    assert units(KERNEL)["gate"] != units(KERNEL.replace("F.silu", "F.gelu"))["gate"]
    assert units(KERNEL)["gate"] != units(KERNEL.replace("x[:, d:]", "x[:, d + 1:]"))["gate"]


def test_augmented_assignment_and_keyword_order_are_one_form():
    a = "def f(x, y):\n    x = x + y * 2\n    return g(x, a=1, b=y)\n"
    b = "def f(x, y):\n    x += 2 * y\n    return g(x, b=y, a=3)\n"
    assert units(a)["f"] == units(b)["f"]


def test_files_scan_refuses_have_no_tree():
    assert parse(b"def f(:\n") is None
    assert parse(b"\xff\xfe") is None
    assert parse(b"x = 1\n" * 200_000) is None  # over scan's size limit


def test_a_deep_expression_hashes_without_recursion():
    tree = parse(("def f(x):\n    return " + "x + " * 450 + "x\n").encode())
    hasher = Hasher(tree, frozenset())
    h, nodes = hasher.stmt(tree.body[0])
    assert nodes > 900 and len(hasher.out) > 400


def test_top_level_stores_and_statements_are_units_of_their_own():
    u = units("import torch\nA, B = 1, 2\nif torch.cuda.is_available():\n    C = torch.zeros(1)\n")
    assert {"A", "B", ""} <= set(u) and u["A"] is not u[""]
    assert isinstance(parse(b"x = 1\n"), ast.Module)


def test_code_inside_try_with_and_match_blocks_is_fingerprinted():
    body = ["d = out.shape[-1]", "out.copy_(torch.nn.functional.silu(x[:, :d].float()) * x[:, d:].float())"]
    head = "import torch\n\n\ndef gate(x, out):\n"
    plain = units(head + "".join(f"    {line}\n" for line in body))["gate"]
    for block in (
        "try:\n        pass\n    except ValueError:\n",
        "with torch.no_grad():\n",
        "match x:\n        case _:\n",
    ):
        depth = "            " if "case" in block else "        "
        hidden = units(head + "    " + block + "".join(f"{depth}{line}\n" for line in body))["gate"]
        assert len(plain - hidden) <= 1, block  # only the def's own hash may move
