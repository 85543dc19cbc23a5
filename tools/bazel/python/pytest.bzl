"""One Bazel test per tests/<area> (plus `toplevel` for tests/test_*.py): each runs pytest on the real tree, with
its files declared so Bazel reruns it only when they change."""

def _pytest(name, paths, data, tags):
    native.py_test(
        name = name,
        main = "//tools/bazel/python:pytest_main.py",
        srcs = ["//tools/bazel/python:pytest_main.py"],
        args = paths,
        data = data,
        python_version = "PY3",
        tags = ["local"] + tags,
        size = "large",
    )

def pytest_areas(exclude = {}, extra_data = []):
    """Declares the tests; `exclude` maps an area to extra tags (e.g. manual for ones that need root and images)."""
    areas = sorted({path.split("/")[0]: None for path in native.glob(["*/**/test_*.py"])}.keys())
    for area in areas:
        files = native.glob([area + "/**"], exclude = ["**/__pycache__/**"])
        _pytest(area, ["tests/" + area], files + ["conftest.py"] + extra_data, exclude.get(area, []))
    top = native.glob(["test_*.py"])
    if top:
        _pytest("toplevel", ["tests/" + f for f in top], top + ["conftest.py"] + extra_data, [])
