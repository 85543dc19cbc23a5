"""A repository rule that makes the project venv Bazel's Python toolchain, found relative to the workspace."""

_BUILD = """
load("@bazel_tools//tools/python:toolchain.bzl", "py_runtime_pair")

py_runtime(
    name = "python3",
    interpreter_path = "{python}",
    python_version = "PY3",
    stub_shebang = "#!{python}",
)

py_runtime_pair(name = "pair", py3_runtime = ":python3")

toolchain(
    name = "toolchain",
    toolchain = ":pair",
    toolchain_type = "@bazel_tools//tools/python:toolchain_type",
)
"""

def _project_venv_impl(ctx):
    root = ctx.path(Label("//:WORKSPACE")).dirname
    python = root.get_child(".venv").get_child("bin").get_child("python")
    if not python.exists:
        fail("no project venv at %s: run `make setup` first" % python)
    ctx.file("WORKSPACE", "workspace(name = \"%s\")\n" % ctx.name)
    ctx.file("BUILD.bazel", _BUILD.format(python = str(python)))
    ctx.file("defs.bzl", "PYTHON = \"%s\"\n" % python)

project_venv = repository_rule(
    implementation = _project_venv_impl,
    local = True,
    doc = "Points py_runtime at <workspace>/.venv/bin/python and exports PYTHON for build actions.",
)
