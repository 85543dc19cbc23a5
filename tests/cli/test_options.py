"""`--device auto` is the default wherever a command can run on either device, and resolves to cuda only when a GPU
is visible."""

import json
import subprocess
import sys

import click
from click.testing import CliRunner
import pytest
import torch

from hotfloat.cli.main import cli
from hotfloat.cli.options import read_archive, read_input
from hotfloat.devices import resolve_device
from hotfloat.errors import InputError

GPU_ONLY = (
    'bundle_id = "g"\nabi_version = "hotfloat-op-abi-v1"\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    'source = "kernels/k.py"\nentry = "run"\narchitectures = ["sm_90"]\n'
)


@pytest.mark.parametrize("path", [("verify",), ("bench",), ("preflight",), ("validator", "run"), ("qualify", "run")])
def test_device_defaults_to_auto(path):
    cmd = cli
    for name in path:
        cmd = cmd.get_command(click.Context(cmd), name)
    [device] = [p for p in cmd.params if p.name == "device"]
    assert device.default == "auto" and list(device.type.choices) == ["auto", "cpu", "cuda"]


def test_auto_is_cuda_only_with_a_gpu(make_bundle):
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto") == want and resolve_device("cpu") == "cpu"
    p = subprocess.run(
        [sys.executable, "-m", "hotfloat.cli", "verify", str(make_bundle(manifest=GPU_ONLY)), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert json.loads(p.stdout)["device"] == want


def test_read_input_names_the_file_in_one_input_error(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 11)
    with pytest.raises(InputError, match=r"big: crowns file: over the 10-byte limit$"):
        read_input(tmp_path / "big", 10, "crowns file")
    with pytest.raises(InputError, match=r"missing: No such file or directory$"):
        read_input(tmp_path / "missing", 10, "crowns file")
    with pytest.raises(InputError, match=r"^/dev/zero: no such bundle directory or archive$"):
        read_archive("/dev/zero")


def test_seed_is_the_workload_seed_in_every_command_secret_where_it_judges_and_fixed_where_it_measures():
    """`--seed` reads the same everywhere (docs/kernel-authors.md, "Seeds"): `bench` fixes it at 0 so its runs compare,
    every command that judges draws a fresh secret one."""

    def walk(group, prefix=()):
        for name in group.list_commands(click.Context(group)):
            cmd = group.get_command(click.Context(group), name)
            yield (*prefix, name), cmd
            if isinstance(cmd, click.Group):
                yield from walk(cmd, (*prefix, name))

    seeds = {" ".join(path): p for path, cmd in walk(cli) for p in cmd.params if p.name == "seed"}
    assert {"bench", "verify", "admit", "qualify run", "qualify calibrate collect", "demo"} <= set(seeds)
    for name, p in seeds.items():
        assert p.help.startswith("Workload seed: "), (name, p.help)
        assert p.default == (0 if name == "bench" else None), (name, p.default)
    bad = CliRunner().invoke(cli, ["bench", "x", "--seed", "-1"])
    assert bad.exit_code == 2 and "not in 0 .. 2**63-1" in bad.output
