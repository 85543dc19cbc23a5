"""The dependency direction is written down and kept: the library never imports grpc, the services or the CLI."""

import ast
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "libs" / "hotfloat" / "hotfloat"
FORBIDDEN = ("grpc", "hotfloat_services", "hotfloat.cli")


def imports(path: Path):
    """Absolute names of every module a file imports, relative imports resolved against its package."""
    package = ["hotfloat", *path.relative_to(LIB).parts[:-1]]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            yield ".".join([*base, *([node.module] if node.module else [])])


def test_library_does_not_import_edges():
    bad = []
    for path in LIB.rglob("*.py"):
        if "cli" in path.relative_to(LIB).parts:
            continue
        bad += [f"{path.relative_to(LIB)} imports {m}" for m in imports(path) if m.split(".")[0] in FORBIDDEN or m == "hotfloat.cli" or m.startswith("hotfloat.cli.")]
    assert not bad, bad
