"""Stdlib-only probe run as a script inside the interpreter under test (the engine venv, the chain venv).

It must not import hotfloat: the checked environment may not have it. Reads a JSON list of checks from argv[1],
prints one JSON list of rows {"name", "ok", "detail"} on stdout. Every check is independent: one missing module
fails its rows, never the probe.
"""

import ast
import importlib
import importlib.metadata
import inspect
import json
import sys
import textwrap


def _resolve(target):
    """Imports the longest module prefix of a dotted path, then walks the attributes; a broken import raises."""
    parts = target.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        try:
            obj = importlib.import_module(prefix)
        except ModuleNotFoundError as e:
            if not e.name or not (prefix == e.name or prefix.startswith(e.name + ".")):
                raise  # a dependency of a real module is missing: that is the failure to report
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(f"no module in {target}")


def version(check):
    try:
        found = importlib.metadata.version(check["dist"])
    except importlib.metadata.PackageNotFoundError:
        return False, f"{check['dist']} is not installed (pin {check['pin']})"
    if found != check["pin"]:
        return False, f"{found} DIFFERS from pin {check['pin']}"
    return True, f"{found} (pin {check['pin']})"


def _params(fn):
    """A function's parameter names; a torch custom op's from its registered schema (inspect sees only *args)."""
    schema = getattr(getattr(fn, "default", None), "_schema", None)
    return [a.name for a in schema.arguments] if schema is not None else list(inspect.signature(fn).parameters)


def callable_(check):
    fn = _resolve(check["target"])
    if not callable(fn):
        return False, "not callable"
    params = _params(fn)
    missing = [p for p in check["params"] if p not in params]
    if check.get("order") and not missing and [p for p in params if p in check["params"]] != check["params"]:
        return False, f"parameters out of order: ({', '.join(params)})"
    if missing:
        return False, f"missing parameter(s) {', '.join(missing)}; has ({', '.join(params)})"
    return True, f"({', '.join(params)})"


def fields(check):
    obj = _resolve(check["target"])
    names = set(getattr(obj, "__dataclass_fields__", {})) | set(getattr(obj, "model_fields", {}))
    names |= set(getattr(obj, "__annotations__", {}))
    missing = [f for f in check["fields"] if f not in names]
    if missing:
        return False, f"missing field(s) {', '.join(missing)}"
    return True, ", ".join(check["fields"])


def attrs(check):
    obj = _resolve(check["target"])
    missing = [a for a in check["attrs"] if not hasattr(obj, a)]
    if missing:
        return False, f"missing attribute(s) {', '.join(missing)}"
    return True, ", ".join(check["attrs"])


def dtypes(check):
    """The dtypes a function's source allocates the named tensors with (`X = torch.ctor(..., dtype=torch.D)`): a seam
    hands those tensors to the slot as they come, and a call whose dtypes differ from the slot's silently runs stock."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(_resolve(check["target"]))))
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            for kw in node.value.keywords:
                if kw.arg == "dtype":
                    for target in node.targets:
                        found.setdefault(ast.unparse(target), set()).add(ast.unparse(kw.value))
    wrong = [
        f"{name} is {' or '.join(sorted(found[name])) if name in found else 'never allocated'}, not {want}"
        for name, want in check["dtypes"].items()
        if found.get(name) != {want}
    ]
    if wrong:
        return False, "; ".join(wrong)
    return True, ", ".join(f"{n} {d}" for n, d in check["dtypes"].items())


KINDS = {"version": version, "callable": callable_, "fields": fields, "attrs": attrs, "dtypes": dtypes}


def run(checks):
    rows = []
    for check in checks:
        try:
            ok, detail = KINDS[check["kind"]](check)
        except Exception as e:  # an import or attribute failure is this row's FAIL, not the probe's
            ok, detail = False, f"{type(e).__name__}: {e}"
        rows.append({"name": check["name"], "ok": ok, "detail": detail})
    return rows


if __name__ == "__main__":
    rows = run(json.loads(sys.argv[1]))
    sys.stdout.write("\n" + json.dumps(rows) + "\n")
