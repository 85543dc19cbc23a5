"""The dependency direction, derived from the code rather than listed: the library's package graph has no cycle (no
upward arrow), the library never imports grpc, the services or the CLI except the CLI's one declared edge, and
record modules import nothing internal beyond the shared vocabulary; inside the qualification, the code that runs
beside candidate kernels in an engine process and the validator's side import nothing of each other."""

import ast
import functools
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "libs" / "hotfloat" / "hotfloat"
OUTSIDE = ("grpc", "hotfloat_services", "hotfloat.cli")
"""The edges of the system: transport, the servers, the command line. The library is imported by them, never the
other way round."""
DECLARED = {"cli": {"hotfloat_services"}}
"""The CLI starts and dials the services (inside the commands that need them): the one edge outward, and only there."""
VOCABULARY = {"env", "errors", "record", "verdict"}
"""All a record module may import from the library: the error root, the record base, the verdict status and the
environment identity results carry (env imports nothing of what it describes: test_env_is_below_what_it_describes)."""
KNOWN_RECORD_IMPORTS = {("verify/records.py", "sandbox")}
"""VerifyReport embeds the SandboxPolicy it ran under (issue 23 item 2). Each must still exist, so fixing one fails
here until its line is removed."""


def imports(path: Path):
    """Absolute names of every module a file imports (anywhere in it), relative imports resolved against its package."""
    package = ["hotfloat", *path.relative_to(LIB).parts[:-1]]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(
                [
                    *(package[: len(package) - node.level + 1] if node.level else []),
                    *([node.module] if node.module else []),
                ]
            )
            yield from ([f"{base}.{a.name}" for a in node.names] if node.module is None else [base])


def top(name: str) -> str | None:
    """The library package (or top-level module) an import lands in; None for the root package or outside."""
    parts = name.split(".")
    if parts[0] != "hotfloat" or len(parts) < 2:
        return None
    return parts[1] if (LIB / parts[1]).is_dir() or (LIB / f"{parts[1]}.py").is_file() else None


def modules():
    return sorted(LIB.rglob("*.py"))


def package_of(path: Path) -> str:
    return path.relative_to(LIB).parts[0].removesuffix(".py")


@functools.cache
def graph() -> dict[str, set[str]]:
    """Package -> the library packages it imports, over every module of the package."""
    out: dict[str, set[str]] = {}
    for path in modules():
        src = package_of(path)
        out.setdefault(src, set()).update(t for m in imports(path) if (t := top(m)) and t != src)
    return out


def cycles(g: dict[str, set[str]]) -> set[frozenset]:
    """Pairs of packages that reach each other."""

    def reach(a: str) -> set[str]:
        seen, todo = set(), [a]
        while todo:
            for b in g.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen

    reached = {a: reach(a) for a in g}
    return {frozenset({a, b}) for a in g for b in reached[a] if a != b and a in reached.get(b, ())}


def test_the_graph_is_derived_from_every_package():
    g = graph()
    assert {"validator", "preflight", "env", "chain", "cli", "ledger"} <= set(g)
    assert "validator" in g["chain"] and "env" in g["preflight"] and "verify" in g["preflight"]


def test_no_upward_arrow():
    found = cycles(graph())
    assert found == set(), sorted(map(sorted, found))


def test_env_is_below_what_it_describes():
    assert not graph()["env"] & {"verify", "compat", "preflight", "qualify"}


def test_the_library_imports_no_edge_but_the_clis_declared_one():
    bad, used = [], set()
    for path in modules():
        allowed = DECLARED.get(package_of(path), set())
        for m in imports(path):
            edge = next((e for e in OUTSIDE if m == e or m.startswith(e + ".")), None)
            if edge is None or (edge == "hotfloat.cli" and package_of(path) == "cli"):
                continue
            if edge in allowed:
                used.add(edge)
            else:
                bad.append(f"{path.relative_to(LIB)} imports {m}")
    assert not bad, bad
    assert used == DECLARED["cli"], "a declared edge no longer used must be removed from DECLARED"


def test_records_import_only_the_vocabulary():
    found = {
        (str(p.relative_to(LIB)), t)
        for p in modules()
        if p.name in ("record.py", "records.py")
        for m in imports(p)
        if (t := top(m)) and t not in VOCABULARY
    }
    assert found - KNOWN_RECORD_IMPORTS == set(), sorted(found - KNOWN_RECORD_IMPORTS)
    assert KNOWN_RECORD_IMPORTS <= found, f"fixed, so remove from KNOWN_RECORD_IMPORTS: {KNOWN_RECORD_IMPORTS - found}"


QUALIFY = LIB / "qualify"
DECISION_SIDE = {"audit", "calibrate", "carryover", "decision", "evidence", "fleet", "gate", "options", "pipeline"}
DECISION_SIDE |= {"protocol", "rule", "tally"}
"""The qualification's judging side, by module or package under qualify/: what times, tallies, judges and records.
Each must exist, so a rename fails here until this set follows it."""


def qualify_file(name: str) -> Path | None:
    """The file an imported hotfloat.qualify name loads: the module, else the package's __init__ (a name imported
    from a package that is not a module of it, `from .. import X`, loads the package); None outside qualify."""
    parts = name.split(".")
    while parts[:2] == ["hotfloat", "qualify"]:
        path = QUALIFY.joinpath(*parts[2:])
        if path.with_suffix(".py").is_file() and len(parts) > 2:
            return path.with_suffix(".py")
        if (path / "__init__.py").is_file():
            return path / "__init__.py"
        parts.pop()
    return None


def reached(start: Path) -> set[Path]:
    """Every qualify module that importing `start` loads through its own imports and theirs (the packages above a
    module, which Python runs first, aside: hotfloat.qualify's __init__ is the library's facade, not a dependency)."""
    seen, todo = set(), [start]
    while todo:
        for name in imports(todo.pop()):
            if (path := qualify_file(name)) and path not in seen:
                seen.add(path)
                todo.append(path)
    return seen


def job(path: Path) -> str:
    return path.relative_to(QUALIFY).parts[0].removesuffix(".py")


def test_the_engines_never_import_the_decision_side():
    """qualify/engines/ runs in the engine process beside the candidate's code: it serves and reports, and nothing
    of the timing, the rule, the gate, the audit's judging or the evidence may be reachable from it."""
    assert {n for n in DECISION_SIDE if not qualify_file(f"hotfloat.qualify.{n}")} == set()
    assert QUALIFY / "decision.py" in reached(QUALIFY / "pipeline.py")  # relative imports resolve, transitively
    engines = sorted((QUALIFY / "engines").rglob("*.py"))
    assert QUALIFY / "engines" / "worker.py" in engines
    found = {
        str(e.relative_to(QUALIFY)): sorted(str(p.relative_to(QUALIFY)) for p in reached(e) if job(p) in DECISION_SIDE)
        for e in engines
    }
    assert {e: hit for e, hit in found.items() if hit} == {}


def test_the_validator_side_never_imports_the_engines():
    """The validator starts an engine by its module's name in a sandbox (qualify/host.py) and never imports one:
    engine code, and whatever it imports, stays out of the process that judges."""
    bad = [
        f"{path.relative_to(LIB)} imports {name}"
        for path in modules()
        if "engines" not in path.relative_to(LIB).parts
        for name in imports(path)
        if (hit := qualify_file(name)) and job(hit) == "engines"
    ]
    assert bad == []


def test_grpc_is_imported_by_the_services_alone():
    """The wire is the services' business: the library (its CLI reaches grpc only through `hotfloat_services`, inside
    the commands that start or dial them), the tools and the engine payload speak records, never grpc."""
    root = LIB.parents[2]
    bad = []
    for path in sorted(p for d in ("libs", "tools", "engine", "deploy", "images") for p in (root / d).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            )
            bad += [f"{path.relative_to(root)} imports {n}" for n in names if n == "grpc" or n.startswith("grpc.")]
    assert not bad, bad


def module_graph() -> dict[str, set[str]]:
    """Module -> the library modules it imports (anywhere in it, `TYPE_CHECKING` blocks included: an annotation that
    needs the importer is a circle too), the packages above a module aside (Python runs them first anyway)."""
    names = {
        ".".join(["hotfloat", *p.relative_to(LIB).with_suffix("").parts]).removesuffix(".__init__"): p
        for p in modules()
    }

    def resolve(name: str) -> str:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name

    return {
        m: {t for n in imports(p) if (t := resolve(n)) and t != m and not m.startswith(t + ".") and t != "hotfloat"}
        for m, p in names.items()
    }


def test_no_module_imports_one_that_imports_it_back():
    """A circle between modules is a concept cut in two (issue 52: the isolation's checks took the `Isolation` that
    called them); the package graph above cannot see one inside a package."""
    g = module_graph()
    assert "hotfloat.qualify.isolation.resident" in g["hotfloat.qualify.isolation.alone"]
    reach = {}
    for start in g:
        seen, todo = set(), [start]
        while todo:
            for b in g[todo.pop()] - seen:
                seen.add(b)
                todo.append(b)
        reach[start] = seen
    assert sorted(m for m in g if m in reach[m]) == []
