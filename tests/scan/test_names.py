"""Every identifier the grammar has is checked, by whatever construct holds it; the builtins are an allow-list."""

import ast
import builtins
import re
from keyword import iskeyword

import pytest

from hotfloat.scan import scan_source
from hotfloat.scan.names import ALLOWED_BUILTINS, IDENTIFIER_FIELDS


def _node_classes() -> list[type]:
    out, todo = [], [ast.AST]
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return out


def _fields(cls: type) -> dict[str, str]:
    """field -> its grammar type, from the node class's signature (`FunctionDef(identifier name, ...)`)."""
    types = getattr(cls, "_field_types", None)
    if types:
        return {f: getattr(t, "__name__", str(t)) for f, t in types.items()}
    sig = re.match(rf"{cls.__name__}\((.*)\)$", ((cls.__doc__ or "").strip().splitlines() or [""])[0])
    return {p.split()[1]: p.split()[0] for p in sig.group(1).split(", ") if p} if sig else {}


STRING_FIELDS = {"type_comment", "tag", "kind"}
"""Fields of type `string` that hold no name: type comments (scan parses without them, and the interpreter ignores
them), `# type: ignore` tags, and a constant's `u` prefix."""


def test_every_identifier_field_of_the_grammar_is_in_the_table():
    """A new grammar field of type identifier (or string) fails here until it is classified and checked."""
    missing, wrong = [], []
    for cls in _node_classes():
        fields = _fields(cls)
        checked = {f for f, _ in IDENTIFIER_FIELDS.get(cls.__name__, ())}
        for field in cls._fields:
            kind = fields.get(field, "")
            if kind.startswith("identifier") and field not in checked:
                missing.append(f"{cls.__name__}.{field}")
            if kind.startswith("string") and field not in STRING_FIELDS:
                missing.append(f"{cls.__name__}.{field}")
            if field in checked and not kind.startswith("identifier"):
                wrong.append(f"{cls.__name__}.{field}")
    assert missing == [] and wrong == []


def test_the_table_names_only_real_node_classes_or_later_grammar():
    known = {c.__name__ for c in _node_classes()}
    assert set(IDENTIFIER_FIELDS) - known <= {"TypeVar", "ParamSpec", "TypeVarTuple"}


@pytest.mark.parametrize(
    "src",
    [
        "class K:\n    def f(self):\n        self.__x = 1\n",
        "def f(__x):\n    return 1\n",
        "d = dict(__del__=1)\n",
        "def f(x):\n    match x:\n        case object(__builtins__=b):\n            return b\n",
        "from .k import __loader__ as L\n",
        "from .k import x as __builtins__\n",
        "try:\n    pass\nexcept ValueError as __x__:\n    pass\n",
        "def f():\n    global __builtins__\n",
        "class _Printer:\n    def f(self):\n        return self.__filenames\n",
        "class E:\n    _missing_ = 1\n",
        "def _value_repr_(x):\n    return x\n",
    ],
)
def test_an_identifier_is_checked_wherever_it_stands(src):
    assert scan_source("kernels/k.py", src.encode()).findings, src


def test_every_builtin_outside_the_allow_list_is_refused():
    """Including the ones site adds (license, credits, copyright): the allow-list closes what a later Python adds."""
    refused = sorted(
        n for n in dir(builtins) if n not in ALLOWED_BUILTINS and not n.startswith("__") and not iskeyword(n)
    )
    refused += ["license", "credits", "copyright", "exit", "quit", "help", "a_builtin_of_a_later_python"]
    for name in refused:
        findings = scan_source("kernels/k.py", f"x = {name}\n".encode()).findings
        assert findings, name
    for name in sorted(ALLOWED_BUILTINS - {"getattr", "hasattr", "super"}):
        assert scan_source("kernels/k.py", f"x = {name}\n".encode()).findings == (), name


@pytest.mark.parametrize(
    "src,clean",
    [
        ("def run(input, out):\n    out.copy_(input)\n", True),
        ("def run(x, out):\n    print = len\n    return print(x)\n", True),
        ("def run(x):\n    def inner():\n        return id\n    id = 1\n    return inner\n", True),
        ("print = len\nx = print(1)\n", False),
        ("def run(x):\n    global id\n    return id(x)\n", False),
        ("class K:\n    id = 1\n    y = id\n", False),
        ("class K:\n    A = 1\n    B = A + 1\n", True),
        ("x = [input for input in range(3)]\n", True),
        ("def f(x=id):\n    return x\n", False),
    ],
)
def test_builtins_are_refused_only_where_the_lookup_can_reach_them(src, clean):
    """A function's locals and closure cells never fall back to the builtins; module and class names may."""
    assert (scan_source("kernels/k.py", src.encode()).findings == ()) is clean, src
