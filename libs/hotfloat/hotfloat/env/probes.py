"""Collects the environment identity cheaply: package metadata and small tool queries, never a CUDA context.

Each probe returns (value, reason); a failing probe becomes a reason on its field, never an exception, so
`collect()` works on a CPU-only CI box, inside a locked-down container and on a GPU host alike.
"""

from __future__ import annotations

import ast
import ctypes
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .record import EnvIdentity, GpuReading
from .source import source_digest

IMAGE_IDENTITY_FILE = Path("/etc/hotfloat/image.json")
"""Where our images carry their identity; HOTFLOAT_IMAGE_IDENTITY overrides it (tests, unpacked rootfs)."""
_TOOL_TIMEOUT_S = 5.0
_SMI_FIELDS = (
    "index",
    "name",
    "uuid",
    "compute_cap",
    "driver_version",
    "clocks.sm",
    "clocks.max.sm",
    "clocks.mem",
    "power.draw",
    "power.limit",
    "temperature.gpu",
    "persistence_mode",
)
_DISTRIBUTIONS = {
    "triton": ("triton",),
    "sglang": ("sglang",),
    "cutlass_dsl": ("nvidia-cutlass-dsl",),
    "flashinfer": ("flashinfer-python", "flashinfer"),
}

Probe = tuple[object, str | None]


def collect() -> EnvIdentity:
    """The identity of this process's environment; fields that cannot be known carry their reason in `absent`."""
    values: dict[str, object] = {
        "python": platform.python_version(),
        "platform": f"{platform.system()}-{platform.release()}-{platform.machine()}",
    }
    absent: dict[str, str] = {}

    def put(name: str, probe: Probe) -> None:
        value, reason = probe
        if value is None:
            absent[name] = reason or "unknown"
        else:
            values[name] = value

    for name, dists in _DISTRIBUTIONS.items():
        put(name, _dist_version(dists))
    torch_version, torch_cuda = _torch_versions()
    put("torch", torch_version)
    put("torch_cuda", torch_cuda)
    put("cuda_runtime", torch_cuda if torch_cuda[0] is not None else (None, "Torch ships no CUDA runtime (CPU build)"))
    put("driver_cuda", _driver_cuda())
    nvcc = _nvcc()
    put("nvcc", nvcc)
    toolkit = _cuda_toolkit()
    if toolkit[0] is None and isinstance(nvcc[0], str):
        toolkit = ".".join(nvcc[0].split(".")[:2]), None  # a pip-installed nvcc ships no version.json
    put("cuda_toolkit", toolkit)
    put("source", (source_digest(), None))
    put("revision", _revision())
    for name, probe in _image().items():
        put(name, probe)
    gpus, smi_reason = _smi()
    put("driver", (gpus[0][2] if gpus else None, smi_reason))
    visibility = os.environ.get("CUDA_VISIBLE_DEVICES")
    values["gpu_visibility"] = "all" if visibility is None else visibility
    visible = _visible(gpus, visibility)
    if visible:
        values.update(gpu_model=visible[0][0].name, gpu_count=len(visible), gpus=tuple(g for g, _, _ in visible))
        put("gpu_capability", (visible[0][1], "nvidia-smi reports no compute capability"))
        values["cuda_graphs"] = os.environ.get("HOTFLOAT_CUDA_GRAPHS") != "0"
    else:
        reason = smi_reason or f"no GPU visible with CUDA_VISIBLE_DEVICES={visibility!r}"
        absent.update(dict.fromkeys(("gpu_model", "gpu_count", "gpu_capability", "cuda_graphs"), reason))
    return EnvIdentity(**values, absent=absent)


def _dist_version(dists: tuple[str, ...]) -> Probe:
    for dist in dists:
        try:
            return importlib.metadata.version(dist), None
        except importlib.metadata.PackageNotFoundError:
            continue
    return None, f"{' / '.join(dists)} is not installed in this interpreter ({sys.executable})"


def _torch_versions() -> tuple[Probe, Probe]:
    """Torch's version and CUDA from torch/version.py, read as text: importing torch costs seconds."""
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "version"):
        cuda = torch.version.cuda
        return (torch.__version__, None), (cuda, None if cuda else "CPU build of Torch")
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return (None, "torch is not installed"), (None, "torch is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError) as e:
        return (None, f"cannot read {path}: {e}"), (None, f"cannot read {path}: {e}")
    found: dict[str, object] = {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and getattr(node, "value", None) is not None:
            try:
                found[target.id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    version, cuda = found.get("__version__"), found.get("cuda")
    return ((version, None if version else f"no __version__ in {path}"), (cuda, None if cuda else "CPU build of Torch"))


def _driver_cuda() -> Probe:
    """cuDriverGetVersion needs no cuInit, so it is cheap and safe even where no device is visible."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None, "no NVIDIA driver library (libcuda.so.1)"
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
        return None, "cuDriverGetVersion failed"
    return f"{version.value // 1000}.{version.value % 1000 // 10}", None


def _cuda_toolkit() -> Probe:
    """CUDA_HOME's toolkit, else the default or newest versioned install under /usr/local."""
    named = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    homes = (
        [Path(named)] if named else [Path("/usr/local/cuda"), *sorted(Path("/usr/local").glob("cuda-*"), reverse=True)]
    )
    for home in homes:
        try:
            return json.loads((home / "version.json").read_text())["cuda"]["version"], None
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None, f"no CUDA toolkit (version.json) at {named or '/usr/local/cuda*'}"


def _run(argv: list[str]) -> tuple[str | None, str | None]:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, f"{argv[0]} failed: {type(e).__name__}"
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()
        return None, f"{Path(argv[0]).name} exited {done.returncode}: {tail[-1] if tail else ''}".strip()
    return done.stdout, None


def _nvcc() -> Probe:
    home = os.environ.get("CUDA_HOME")
    exe = shutil.which("nvcc") or (home and shutil.which(str(Path(home) / "bin" / "nvcc")))
    if not exe:
        return None, "nvcc is not on PATH"
    out, reason = _run([exe, "--version"])
    if out is None:
        return None, reason
    match = re.search(r"release ([0-9.]+), V([0-9.]+)", out)
    return (match.group(2), None) if match else (None, "unrecognised `nvcc --version` output")


def _revision() -> Probe:
    """The git revision of the checkout this package runs from, else the one baked into our image: a hint beside the
    source digest."""
    here = Path(__file__).resolve().parent
    if shutil.which("git"):
        head, _ = _run(["git", "-C", str(here), "rev-parse", "HEAD"])
        if head:
            dirty, _ = _run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"])
            return head.strip() + ("+dirty" if dirty else ""), None
    image = _image_file()
    if isinstance(image, dict) and isinstance(image.get("revision"), str):
        return image["revision"], None
    return None, "not a git checkout and no image identity file"


def _image_file() -> dict | str:
    path = Path(os.environ.get("HOTFLOAT_IMAGE_IDENTITY") or IMAGE_IDENTITY_FILE)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return f"not running in a hotfloat image (no {path})"
    except (OSError, ValueError) as e:
        return f"unreadable image identity {path}: {e}"
    return data if isinstance(data, dict) else f"image identity {path} is not a JSON object"


def _image() -> dict[str, Probe]:
    data = _image_file()
    if isinstance(data, str):
        return {"image": (None, data), "image_inputs": (None, data), "image_digest": (None, data)}
    name = f"{data.get('name')}:{data.get('flavor')}" if data.get("name") else None
    digest = os.environ.get("HOTFLOAT_IMAGE_DIGEST") or None
    return {
        "image": (name, "image identity file names no image"),
        "image_inputs": (data.get("inputs_digest") or None, "image identity file has no inputs_digest"),
        "image_digest": (digest, "the launcher did not pass HOTFLOAT_IMAGE_DIGEST"),
    }


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None  # nvidia-smi prints '[N/A]' or '[Not Supported]' for readings a board lacks


def _smi() -> tuple[list[tuple[GpuReading, str | None, str]], str | None]:
    """Every GPU nvidia-smi lists, as (reading, compute capability, driver version)."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return [], "no GPU: nvidia-smi is not on PATH"
    out, reason = _run([exe, f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"])
    if out is None:
        return [], reason
    gpus = []
    for line in out.strip().splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(_SMI_FIELDS) or not cells[0].isdigit():
            continue
        row = dict(zip(_SMI_FIELDS, cells, strict=False))
        reading = GpuReading(
            index=int(row["index"]),
            name=row["name"],
            uuid=row["uuid"] or None,
            sm_clock_mhz=_number(row["clocks.sm"]),
            max_sm_clock_mhz=_number(row["clocks.max.sm"]),
            mem_clock_mhz=_number(row["clocks.mem"]),
            power_draw_w=_number(row["power.draw"]),
            power_limit_w=_number(row["power.limit"]),
            temperature_c=_number(row["temperature.gpu"]),
            persistence_mode=row["persistence_mode"] or None,
        )
        capability = row["compute_cap"] if _number(row["compute_cap"]) is not None else None
        gpus.append((reading, capability, row["driver_version"]))
    return gpus, None if gpus else "nvidia-smi listed no GPU"


def _visible(gpus: list, visibility: str | None) -> list:
    """The GPUs CUDA would expose: CUDA_VISIBLE_DEVICES entries are indices or UUID prefixes, in the given order."""
    if visibility is None:
        return gpus
    chosen = []
    for entry in (e.strip() for e in visibility.split(",")):
        match = [
            g
            for g in gpus
            if (entry.isdigit() and g[0].index == int(entry))
            or (entry.startswith("GPU-") and (g[0].uuid or "").startswith(entry))
        ]
        if not match:
            break  # CUDA stops at the first invalid entry
        chosen.append(match[0])
    return chosen
