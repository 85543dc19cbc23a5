"""chain/codes.py: the closed list of reason codes is the one docs/chain.md documents, member by member, and every
pipeline stage that can fail a submission has its code."""

import ast
import re
from pathlib import Path

from hotfloat.chain.codes import STAGE_FAILURES, Code
from hotfloat.ledger.records import NEXT

ROOT = Path(__file__).resolve().parents[2]


def documented_in_code() -> dict[str, str]:
    """Code value -> the docstring under its member in codes.py."""
    cls = next(
        n
        for n in ast.parse((ROOT / "libs/hotfloat/hotfloat/chain/codes.py").read_text()).body
        if getattr(n, "name", "") == "Code"
    )
    out = {}
    for member, doc in zip(cls.body, cls.body[1:], strict=False):
        if isinstance(member, ast.Assign) and isinstance(doc, ast.Expr):
            out[member.value.value] = doc.value.value
    return out


def test_the_docs_table_is_the_enum():
    table = dict(re.findall(r"^\| `([a-z_]+)` \| (.+) \|$", (ROOT / "docs/chain.md").read_text(), re.M))
    assert table == documented_in_code()
    assert set(table) == {c.value for c in Code}


def test_every_stage_that_can_fail_has_a_code():
    assert set(STAGE_FAILURES) == {stage for stage, _ in NEXT.values()}
