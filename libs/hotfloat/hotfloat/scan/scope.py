"""Which name loads can fall back to the builtins: a function's locals and closure cells never do, while a module or
class body name, or a `global` one, that is not bound yet when it is read, is the builtin of that name. The builtins
rule applies to those loads only, so `def run(input, out)` keeps its parameter."""

from __future__ import annotations

import ast

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Scopes:
    """The global name loads of a file (module or builtins lookups), the names the module binds, and per class the
    names its body binds."""

    def __init__(self, tree: ast.Module) -> None:
        self.global_loads: dict[int, ast.ClassDef | None] = {}
        """id(Name) -> the class whose body holds the load, or None (module level, or global in a function)."""
        self.module_names: set[str] = bound(tree.body) | {
            n for node in ast.walk(tree) if isinstance(node, ast.Global) for n in node.names
        }
        self.class_names: dict[int, set[str]] = {}
        """id(ClassDef) -> names its body binds (a load there looks in the class first)."""
        self._visit(tree, [], None)

    def _visit(self, node: ast.AST, functions: list[set[str]], klass: ast.ClassDef | None) -> None:
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) and not any(node.id in names for names in functions):
                self.global_loads[id(node)] = klass
        elif isinstance(node, FUNCTIONS + COMPREHENSIONS):
            for part in _outer_parts(node):
                self._visit(part, functions, klass)
            inner = [*functions, _locals(node)]
            for part in _inner_parts(node):
                self._visit(part, inner, None)
        elif isinstance(node, ast.ClassDef):
            for part in _outer_parts(node):
                self._visit(part, functions, klass)
            self.class_names[id(node)] = bound(node.body)
            for stmt in node.body:
                self._visit(stmt, functions, node)
        else:
            for child in ast.iter_child_nodes(node):
                self._visit(child, functions, klass)


def _outer_parts(node: ast.AST) -> list[ast.AST]:
    """What the enclosing scope evaluates for a def, lambda, class or comprehension."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = node.args
        args = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x)]
        notes = [x.annotation for x in args if x.annotation] + ([node.returns] if node.returns else [])
        return [*node.decorator_list, *a.defaults, *(d for d in a.kw_defaults if d), *notes]
    if isinstance(node, ast.Lambda):
        return [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    return [node.generators[0].iter]


def _inner_parts(node: ast.AST) -> list[ast.AST]:
    """What runs inside the new scope."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return list(node.body)
    if isinstance(node, ast.Lambda):
        return [node.body]
    first, *rest = node.generators
    parts: list[ast.AST] = [first.target, *first.ifs]
    for g in rest:
        parts += [g.target, g.iter, *g.ifs]
    return parts + ([node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt])


def _locals(node: ast.AST) -> set[str]:
    """Names a function or comprehension binds in its own scope, less those it declares global."""
    if isinstance(node, COMPREHENSIONS):
        return bound([g.target for g in node.generators])
    a = node.args
    params = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x}
    body = node.body if isinstance(node.body, list) else [node.body]
    declared = {n for part in body for x in _same_scope(part) if isinstance(x, ast.Global) for n in x.names}
    return (params | bound(body)) - declared


def bound(body: list[ast.AST]) -> set[str]:
    """Names bound in this scope by these nodes; nested functions, lambdas, comprehensions and classes bind their own
    (a walrus inside a comprehension is left out, which only makes loads of its name count as global)."""
    names: set[str] = set()
    for node in (x for part in body for x in _same_scope(part)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Nonlocal):
            names |= set(node.names)
    return names


def _same_scope(node: ast.AST):
    """node and its descendants in its own scope: a nested scope yields itself and what its parent evaluates."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, FUNCTIONS + COMPREHENSIONS + (ast.ClassDef,)):
            todo += _outer_parts(n)
        else:
            todo += ast.iter_child_nodes(n)
