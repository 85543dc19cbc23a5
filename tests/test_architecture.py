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
ENGINE = LIB / "engine"


def module_file(name: str) -> Path | None:
    """The file an imported hotfloat name loads: the module, else the package's __init__ (a name imported from a
    package that is not a module of it, `from .. import X`, loads the package); None outside the library."""
    parts = name.split(".")
    while parts[:1] == ["hotfloat"] and len(parts) > 1:
        path = LIB.joinpath(*parts[1:])
        if path.with_suffix(".py").is_file():
            return path.with_suffix(".py")
        if (path / "__init__.py").is_file():
            return path / "__init__.py"
        parts.pop()
    return None


def reached(start: Path) -> set[Path]:
    """Every library module that importing `start` loads through its own imports and theirs (the packages above a
    module, which Python runs first, are checked for themselves: test_the_engine_process_loads_no_qualification)."""
    seen, todo = set(), [start]
    while todo:
        for name in imports(todo.pop()):
            if (path := module_file(name)) and path not in seen:
                seen.add(path)
                todo.append(path)
    return seen


def test_the_engine_never_imports_the_qualification():
    """engine/ runs in the engine process beside the candidate's code: it serves and reports, and nothing of the
    qualification (the timing, the rule, the gate, the audit's judging, the evidence) may be reachable from it."""
    assert QUALIFY / "decision.py" in reached(QUALIFY / "pipeline.py")  # relative imports resolve, transitively
    engine = sorted(ENGINE.rglob("*.py"))
    assert ENGINE / "worker.py" in engine
    found = {
        str(e.relative_to(LIB)): sorted(str(p.relative_to(LIB)) for p in reached(e) if QUALIFY in p.parents)
        for e in engine
    }
    assert {e: hit for e, hit in found.items() if hit} == {}


def test_the_qualification_never_imports_the_engine():
    """The validator starts an engine by its module's name in a sandbox (qualify/host.py) and never imports one:
    engine code, and whatever it imports, stays out of the process that judges (its wire frames, presets and
    host-load readings are shared by name from engine/, which imports nothing heavy)."""
    shared = {ENGINE / "__init__.py", ENGINE / "wire.py", ENGINE / "presets.py", ENGINE / "hostload.py"}
    bad = sorted(
        f"{q.relative_to(LIB)} reaches {p.relative_to(LIB)}"
        for q in QUALIFY.rglob("*.py")
        for p in reached(q)
        if ENGINE in p.parents and p not in shared
    )
    assert bad == []


def test_the_engine_process_loads_no_qualification(bundles, tmp_path):
    """What the import graph above cannot see: a package's __init__ runs before any module of it. Run the worker as
    host.py starts it (as __main__), arm a bundle, serve one CPU batch, and list every module the interpreter looked
    for (a finder first on sys.meta_path sees importlib's imports too): no hotfloat.qualify module may be among them."""
    import os
    import socket
    import subprocess
    import sys
    import time

    from hotfloat.bundle import load_bundle
    from hotfloat.engine import wire

    ours, theirs = socket.socketpair()
    env = {**os.environ, "TRITON_INTERPRET": "1", "HOTFLOAT_WORKER_HOME": str(tmp_path)}
    log = tmp_path / "imports.log"
    probe = (
        f"import runpy, sys; log = open({str(log)!r}, 'w')\n"
        "class Seen:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        log.write(name + '\\n'); log.flush()\n"
        "sys.meta_path.insert(0, Seen())\n"
        "runpy.run_module('hotfloat.engine.worker', run_name='__main__', alter_sys=True)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", probe], stdin=theirs.fileno(), env=env)
    theirs.close()
    cand = bundles["exact"]
    spec = {"kind": "transformers", "preset": "tiny", "dtype": "fp32", "device": "cpu", "weight_seed": 0}
    spec |= {"decode": "eager", "bundle": str(cand), "identity": load_bundle(cand).identity, "warmup": []}
    with ours:
        wire.send(ours, spec)
        deadline = time.monotonic() + 300
        assert wire.recv(ours, deadline)["type"] == "ready"
        wire.send(ours, {"op": "batch", "prompts": [[5, 6, 7]], "max_new": [2]})
        assert wire.recv(ours, deadline)["type"] == "done"
        wire.send(ours, {"op": "stop"})
        assert wire.recv(ours, deadline)["type"] == "counts"
    assert proc.wait(timeout=60) == 0
    names = log.read_text().split()
    assert {"hotfloat.engine.wire", "hotfloat.seams", "hotfloat.engine.transformers_engine"} <= set(names)
    assert [n for n in names if n == "hotfloat.qualify" or n.startswith("hotfloat.qualify.")] == []


def test_the_qualifications_face_loads_only_what_is_asked_for():
    """`hotfloat.qualify`'s names are imported on first use: a light reader of one module (the validator's ledger reads
    records, the chain reads calibration files) loads that module, never the pipeline and its protocol."""
    import json
    import subprocess
    import sys

    probe = (
        "import json, sys\n"
        "import hotfloat.qualify.records\n"
        "from hotfloat.qualify import RuleConfig\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('hotfloat.qualify'))))\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    loaded = set(json.loads(p.stdout))
    assert {"hotfloat.qualify", "hotfloat.qualify.records"} <= loaded
    assert "hotfloat.qualify.pipeline" not in loaded and "hotfloat.qualify.protocol" not in loaded, sorted(loaded)


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
