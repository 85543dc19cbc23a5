"""GPU pinning on CPU: a fake driver tree (/proc/driver/nvidia/gpus) and /dev, and a stand-in NVML, stand in for an
8-GPU host whose device minors are not its NVML indices. That CUDA in a sandbox then sees exactly the pinned GPU is
checked on a GPU host only (the gpu_pin recipe, tools/device/recipes/gpu_pin.sh)."""

from __future__ import annotations

import os

import pytest

from hotfloat.errors import InputError
from hotfloat.engine import hostload
from hotfloat.sandbox import gpus

BUSES = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0"]
MINORS = [2, 0, 3, 1]
"""The driver's minor numbers in PCI bus order: /dev/nvidia0 is the second GPU, not the first."""


def uuid(i: int) -> str:
    return f"GPU-{i:08x}-1111-2222-3333-444455556666"


@pytest.fixture
def host(tmp_path):
    """(driver tree, /dev) of a four-GPU host."""
    proc, dev = tmp_path / "gpus", tmp_path / "dev"
    dev.mkdir()
    for i, (bus, minor) in enumerate(zip(BUSES, MINORS, strict=True)):
        (proc / bus).mkdir(parents=True)
        (proc / bus / "information").write_text(
            f"Model: \t NVIDIA H200\nIRQ: 1\nGPU UUID: \t {uuid(i)}\nBus Location: \t {bus}\nDevice Minor: \t {minor}\n"
        )
        (dev / f"nvidia{minor}").touch()
    for name in (*gpus.CONTROL_NODES, "nvidia-caps"):
        (dev / name).touch()
    return proc, dev


class NVML:
    """Stand-in for pynvml: NVML's index i is the i-th GPU in PCI bus order (as on the H200 hosts)."""

    def __init__(self, count: int = 4, fail: Exception | None = None):
        self.count, self.fail = count, fail

    def nvmlInit(self):
        if self.fail:
            raise self.fail

    def nvmlDeviceGetCount(self):
        return self.count

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("index", i)

    def nvmlDeviceGetUUID(self, handle):
        return uuid(handle[1]).encode()

    def nvmlDeviceGetHandleByUUID(self, u):
        return ("uuid", u)


def test_the_driver_tree_joins_uuid_bus_and_minor(host):
    listed = gpus.installed(host[0])
    assert [(g.uuid, g.bus, g.minor) for g in listed] == [(uuid(i), BUSES[i], MINORS[i]) for i in range(4)]
    assert gpus.installed(host[0].parent / "absent") == []


@pytest.mark.parametrize(
    ("env", "minors"),
    [
        ({"CUDA_VISIBLE_DEVICES": uuid(2)}, [3]),
        ({"CUDA_VISIBLE_DEVICES": f"{uuid(3)[:12]},{uuid(0)}"}, [1, 2]),  # a UUID prefix, CUDA's order kept
        ({"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, [0]),
        ({"CUDA_VISIBLE_DEVICES": "0,7,2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, [2]),  # CUDA stops at the invalid entry
        ({"CUDA_VISIBLE_DEVICES": ""}, []),
    ],
)
def test_a_sandbox_binds_only_the_visible_gpus_nodes(host, env, minors):
    proc, dev = host
    nodes = gpus.device_nodes(env, proc, dev)
    assert nodes == [str(dev / f"nvidia{m}") for m in minors] + [str(dev / n) for n in gpus.CONTROL_NODES]


@pytest.mark.parametrize("env", [{}, {"CUDA_VISIBLE_DEVICES": "1"}, {"CUDA_VISIBLE_DEVICES": "MIG-abc"}])
def test_gpus_that_cannot_be_placed_leave_every_node_bound_as_before(host, env):
    """Unset, an index while CUDA orders by speed, a MIG instance: this cannot tell which node, so every one."""
    proc, dev = host
    assert gpus.device_nodes(env, proc, dev)[:4] == [str(dev / f"nvidia{m}") for m in range(4)]


def test_pin_puts_nvmls_gpu_in_cuda_visible_devices(host, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    chosen = gpus.pin(2, NVML(), host[0])
    assert (chosen.uuid, chosen.minor) == (uuid(2), 3)
    assert os.environ["CUDA_VISIBLE_DEVICES"] == uuid(2) and os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert gpus.device_nodes(root=host[0], dev=host[1])[0] == str(host[1] / "nvidia3")


@pytest.mark.parametrize(
    ("nvml", "index", "says"),
    [
        (NVML(), 4, "--gpu 4: no such GPU; NVML lists 4 (0-3)"),
        (NVML(count=0), 0, "--gpu 0: no such GPU; NVML lists 0"),
        (
            NVML(fail=OSError("libnvidia-ml.so.1: cannot open")),
            0,
            "--gpu 0: NVML cannot list this host's GPUs (OSError",
        ),
    ],
)
def test_a_gpu_that_is_not_there_is_one_error_line(host, nvml, index, says, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with pytest.raises(InputError) as e:
        gpus.pin(index, nvml, host[0])
    assert str(e.value).startswith(says) and "\n" not in str(e.value)
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_a_gpu_nvml_lists_but_the_driver_tree_does_not_is_refused(tmp_path):
    with pytest.raises(InputError, match="does not list"):
        gpus.pin(1, NVML(), tmp_path)


@pytest.mark.parametrize(
    ("env", "handle"),
    [
        ({}, ("index", 0)),
        ({"CUDA_VISIBLE_DEVICES": uuid(3)}, ("uuid", uuid(3))),
        ({"CUDA_VISIBLE_DEVICES": "2", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, ("uuid", uuid(2))),
        ({"CUDA_VISIBLE_DEVICES": "2"}, None),  # CUDA orders by speed: no reading rather than another GPU's
    ],
)
def test_hostload_reads_the_clock_of_cudas_device_0(host, env, handle):
    assert hostload.nvml_handle(NVML(), env, host[0]) == handle
