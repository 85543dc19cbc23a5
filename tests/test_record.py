"""One record base: every pydantic model in libs/ and services/ derives from hotfloat.record.Record, so each refuses
unknown keys, is frozen and writes NaN the same way; a second base would let those drift apart."""

import ast
import math
from pathlib import Path

import pytest
from pydantic import ValidationError

from hotfloat.record import Record, first_error

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "libs" / "hotfloat" / "hotfloat" / "record.py"


def direct_basemodels():
    """Every class, outside the base's own module, that names pydantic's BaseModel as a base."""
    for path in sorted([*(ROOT / "libs").rglob("*.py"), *(ROOT / "services").rglob("*.py")]):
        if path == BASE or "_proto" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                names = {b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases}
                if "BaseModel" in names:
                    yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"


def test_every_record_derives_from_the_one_base():
    assert list(direct_basemodels()) == []


class _Point(Record):
    x: float
    """A coordinate."""


def test_the_base_refuses_unknown_keys_and_changes():
    with pytest.raises(ValidationError) as e:
        _Point.model_validate({"x": 1.0, "y": 2.0})
    assert first_error(e.value) == "y: unknown key (refused: unknown keys never grant anything)"
    with pytest.raises(ValidationError):
        _Point(x=1.0).x = 2.0  # type: ignore[misc]


def test_nan_survives_a_round_trip():
    back = _Point.model_validate_json(_Point(x=math.nan).model_dump_json())
    assert math.isnan(back.x)
    assert _Point.model_fields["x"].description == "A coordinate."
