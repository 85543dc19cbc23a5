"""The sandbox's view: system and Python runtime read-only, no repository, no passwd, a cleared environment."""

from __future__ import annotations

import sys
from pathlib import Path

from hotfloat.sandbox import Bind, SandboxPolicy, bwrap_argv, python_runtime_dirs

REPO = Path(__file__).resolve().parents[2]


def test_runtime_dirs_include_the_interpreter_but_not_the_repository_sources():
    dirs = python_runtime_dirs()
    assert any(sys.prefix.startswith(d) or d == sys.prefix for d in dirs)
    assert not any(d.startswith(str(REPO / "libs")) for d in dirs)
    assert "/etc" not in dirs and "/root" not in dirs and "/home" not in dirs


def test_every_namespace_is_unshared_and_the_environment_is_rebuilt():
    argv = bwrap_argv(SandboxPolicy(), ["true"], binds=[Bind(Path("/x"), "/bundle")], env={"A": "1"})
    for flag in (
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
    ):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert ["--ro-bind", "/x", "/bundle"] == argv[argv.index("/x") - 1 : argv.index("/x") + 2]
    assert "/etc/passwd" not in argv and "/etc" not in argv
    assert argv[-2:] == ["--", "true"] and ["--setenv", "A", "1"] == argv[argv.index("A") - 1 : argv.index("A") + 2]


def test_gpu_policy_exposes_device_nodes_only_when_asked():
    plain = bwrap_argv(SandboxPolicy(), ["true"], binds=[], env={})
    gpu = bwrap_argv(SandboxPolicy(gpu=True, address_space_bytes=None), ["true"], binds=[], env={})
    assert "/dev/nvidiactl" not in plain and "/dev/nvidiactl" in gpu
