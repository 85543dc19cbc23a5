"""Which physical GPU a process serves on: `hotfloat serve ... --gpu N` pins it (`pin`), the sandbox shows a
candidate only that GPU's device node (`device_nodes`), and hostload reads that GPU's clock.

Three numberings meet here. NVML (and nvidia-smi) number every GPU of the host; CUDA numbers only what
CUDA_VISIBLE_DEVICES leaves, in its own order; a device node /dev/nvidiaN carries the driver's minor number, which
need not equal either. So a pinned process names its GPU by UUID, and the driver's /proc/driver/nvidia/gpus joins
a UUID to its minor number.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError

PROC_GPUS = Path("/proc/driver/nvidia/gpus")
CONTROL_NODES = ("nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset")
"""The driver's shared nodes every CUDA process opens, whichever GPU it uses."""


@dataclass(frozen=True)
class Gpu:
    """One GPU as the driver lists it."""

    uuid: str
    bus: str
    """PCI bus id, as the driver's folder for it is named."""
    minor: int
    """N of its device node /dev/nvidiaN."""


def installed(root: Path = PROC_GPUS) -> list[Gpu]:
    """Every GPU the driver lists, in PCI bus order; empty without the driver."""
    gpus = []
    for info in sorted(root.glob("*/information")):
        fields = dict(line.split(":", 1) for line in info.read_text(errors="replace").splitlines() if ":" in line)
        fields = {k.strip(): v.strip() for k, v in fields.items()}
        if fields.get("GPU UUID") and fields.get("Device Minor", "").isdigit():
            gpus.append(Gpu(fields["GPU UUID"], info.parent.name, int(fields["Device Minor"])))
    return gpus


def visible(env: Mapping[str, str], gpus: list[Gpu]) -> list[Gpu] | None:
    """The GPUs CUDA_VISIBLE_DEVICES leaves, in CUDA's order (it stops at the first entry that names none); None when
    it is unset or names a GPU this cannot place (a MIG instance, or an index while CUDA orders by speed rather than
    by PCI bus), so the caller cannot narrow anything down."""
    spec = env.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return None
    by_bus = env.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"
    chosen: list[Gpu] = []
    for entry in (e.strip() for e in spec.split(",") if e.strip()):
        if entry.startswith("GPU-"):
            match = [g for g in gpus if g.uuid.startswith(entry)]
            if len(match) > 1:
                return None
        elif entry.isdigit() and by_bus:
            match = gpus[int(entry) : int(entry) + 1]
        else:
            return None
        if not match:
            break
        chosen.append(match[0])
    return chosen


def device_nodes(env: Mapping[str, str] = os.environ, root: Path = PROC_GPUS, dev: Path = Path("/dev")) -> list[str]:
    """The nodes a GPU sandbox binds: the visible GPUs' own (every /dev/nvidiaN when they cannot be placed) and the
    driver's control nodes."""
    chosen = visible(env, installed(root))
    own = (
        sorted(str(p) for p in dev.glob("nvidia[0-9]*"))
        if chosen is None
        else [str(dev / f"nvidia{g.minor}") for g in chosen]
    )
    return [*own, *(str(dev / n) for n in CONTROL_NODES)]


def pin(index: int, nvml=None, root: Path = PROC_GPUS) -> Gpu:
    """Makes this process, and every child it starts, use only the GPU NVML (and nvidia-smi) numbers `index`: its
    UUID goes to CUDA_VISIBLE_DEVICES, so CUDA's device 0 is that GPU whatever order CUDA would enumerate in."""
    try:
        if nvml is None:
            import pynvml as nvml
        nvml.nvmlInit()
        count = nvml.nvmlDeviceGetCount()
    except Exception as e:  # no nvidia-ml-py, no driver, no permission: all the same to the operator
        raise InputError(f"--gpu {index}: NVML cannot list this host's GPUs ({type(e).__name__}: {e})") from None
    if not 0 <= index < count:
        raise InputError(f"--gpu {index}: no such GPU; NVML lists {count}" + (f" (0-{count - 1})" if count else ""))
    uuid = nvml.nvmlDeviceGetUUID(nvml.nvmlDeviceGetHandleByIndex(index))
    env = {
        "CUDA_VISIBLE_DEVICES": uuid.decode() if isinstance(uuid, bytes) else uuid,
        "CUDA_DEVICE_ORDER": "PCI_BUS_ID",
    }
    chosen = visible(env, installed(root))
    if not chosen:
        raise InputError(f"--gpu {index}: the driver's {root} does not list {env['CUDA_VISIBLE_DEVICES']}")
    os.environ.update(env)
    return chosen[0]
