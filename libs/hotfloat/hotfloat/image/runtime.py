"""Runs a built image with runc, daemonless: layers unpacked once, stacked read-only with overlayfs.

The sandbox is decided here, not by the caller: non-root user, no capabilities, no new privileges, read-only root,
memory and pid limits, and a private network namespace with nothing in it unless the caller asks for the host's.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InfrastructureError
from .oci import Layout

CACHE = Path(os.environ.get("HOTFLOAT_IMAGE_CACHE", "/var/tmp/hotfloat-images"))
"""Unpacked layers (shared between containers) and one runc bundle per running container."""


@dataclass(frozen=True)
class Mount:
    """A host path bound into the container."""

    host: Path
    inside: str
    readonly: bool = True


@dataclass(frozen=True)
class Container:
    """One container to run from an image layout."""

    name: str
    image: Path
    args: tuple[str, ...] = ()
    """Replaces the image's entrypoint when given."""
    mounts: tuple[Mount, ...] = ()
    network: bool = False
    """False: a new, empty network namespace (like `--network none`); True: the host's network."""
    memory_bytes: int = 4 << 30
    pids: int = 512
    env: dict[str, str] = field(default_factory=dict)
    gpu: bool = False
    """Every NVIDIA device node and the host driver's compute libraries (`nvidia_host`), for a service that pins one
    GPU itself (`serve --gpu N`) and shows its sandboxes only that one."""


DRIVER_LIBRARIES = (
    "libcuda.so",
    "libnvidia-ml.so",
    "libnvidia-ptxjitcompiler.so",
    "libnvidia-nvvm.so",
    "libnvidia-gpucomp.so",
)
"""The driver's user-space half CUDA and NVML load; it must match the host's kernel module, so it comes from the
host, never from the image."""


def nvidia_host(dev: Path = Path("/dev")) -> tuple[list[tuple[str, int, int]], list[str]]:
    """The host's NVIDIA character devices (path, major, minor) and driver libraries (paths `ldconfig -p` lists)."""
    nodes = [
        (str(p), os.major(st.st_rdev), os.minor(st.st_rdev))
        for p in sorted(dev.glob("nvidia*"))
        if stat.S_ISCHR((st := p.stat()).st_mode)
    ]
    listed = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, check=False).stdout.splitlines()
    libs = sorted(
        {
            line.rpartition("=> ")[2].strip()
            for line in listed
            if "x86-64" in line and line.strip().startswith(DRIVER_LIBRARIES)
        }
    )
    if not nodes or not libs:
        raise InfrastructureError("no NVIDIA driver on this host (no /dev/nvidia* or no libcuda in ldconfig)")
    return nodes, libs


def _runc() -> str:
    exe = shutil.which("runc")
    if exe is None:
        raise InfrastructureError("runc is not installed (run tools/image_deps.sh)")
    return exe


def unpack_layers(layout: Layout) -> list[Path]:
    """Each layer extracted once under CACHE/unpacked/<digest>; returns them bottom first.

    A layer is extracted into a private folder and renamed into place, so concurrent starts (tests, `make up`
    beside `make miner`) never see or produce a half-extracted layer.
    """
    dirs = []
    for blob in layout.layer_paths():
        target = CACHE / "unpacked" / blob.name
        if not target.is_dir():
            scratch = target.with_name(f"{blob.name}.partial-{os.getpid()}")
            shutil.rmtree(scratch, ignore_errors=True)
            scratch.mkdir(parents=True)
            done = subprocess.run(
                ["tar", "-x", "--numeric-owner", "-p", "-f", str(blob), "-C", str(scratch)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                shutil.rmtree(scratch, ignore_errors=True)
                raise InfrastructureError(f"cannot unpack layer {blob.name[:12]}: {done.stderr.strip()}")
            try:
                scratch.rename(target)
            except OSError:  # another process finished the same layer first; theirs is identical
                shutil.rmtree(scratch, ignore_errors=True)
        dirs.append(target)
    return dirs


def _config(c: Container, image_config: dict) -> dict:
    cfg = image_config.get("config") or {}
    uid, _, gid = str(cfg.get("User", "65534:65534")).partition(":")
    env = [e for e in cfg.get("Env", []) if e.split("=", 1)[0] not in c.env]
    env += [f"{k}={v}" for k, v in sorted(c.env.items())]
    argv = list(c.args) or list(cfg.get("Entrypoint") or []) + list(cfg.get("Cmd") or [])
    mounts = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {
            "destination": "/dev",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "strictatime", "mode=755", "size=65536k"],
        },
        {
            "destination": "/dev/pts",
            "type": "devpts",
            "source": "devpts",
            "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"],
        },
        {
            "destination": "/dev/shm",
            "type": "tmpfs",
            "source": "shm",
            "options": ["nosuid", "noexec", "nodev", "size=268435456"],
        },
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {
            "destination": "/tmp",
            "type": "tmpfs",
            "source": "tmpfs",
            "options": ["nosuid", "nodev", "size=1073741824", "mode=1777"],
        },
    ]
    mounts += [
        {
            "destination": m.inside,
            "type": "bind",
            "source": str(m.host),
            "options": ["rbind", "nosuid", "nodev", "ro" if m.readonly else "rw"],
        }
        for m in c.mounts
    ]
    nodes, libs = nvidia_host() if c.gpu else ([], [])
    mounts += [
        {"destination": lib, "type": "bind", "source": lib, "options": ["bind", "nosuid", "nodev", "ro"]}
        for lib in libs
    ]
    namespaces = [{"type": t} for t in ("pid", "ipc", "uts", "mount", *(() if c.network else ("network",)))]
    resources = {"memory": {"limit": c.memory_bytes}, "pids": {"limit": c.pids}}
    linux = {"namespaces": namespaces, "resources": resources}
    if nodes:  # a GPU container: runc creates the host's NVIDIA nodes inside, and its cgroup lets it use them
        resources["devices"] = [
            {"allow": True, "type": "c", "major": ma, "minor": mi, "access": "rw"} for _, ma, mi in nodes
        ]
        linux["devices"] = [
            {"path": p, "type": "c", "major": ma, "minor": mi, "fileMode": 0o666, "uid": 0, "gid": 0}
            for p, ma, mi in nodes
        ]
    linux["cgroupsPath"] = f"/hotfloat/{c.name}"
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": int(uid), "gid": int(gid or uid)},
            "args": argv,
            "env": env,
            "cwd": cfg.get("WorkingDir") or "/tmp",
            "capabilities": {"bounding": [], "effective": [], "inheritable": [], "permitted": [], "ambient": []},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
            "noNewPrivileges": True,
        },
        "root": {"path": "rootfs", "readonly": True},
        "hostname": c.name,
        "mounts": mounts,
        "linux": linux,
    }


def prepare(c: Container) -> Path:
    """Builds the runc bundle for `c`: the image's layers stacked read-only, and config.json; returns its folder."""
    _runc()
    layout = Layout(c.image)
    lowers = unpack_layers(layout)
    bundle = CACHE / "run" / c.name
    release(c.name)
    rootfs = bundle / "rootfs"
    rootfs.mkdir(parents=True)
    options = "lowerdir=" + ":".join(str(d) for d in reversed(lowers))
    if c.gpu:  # the driver's libraries are bound where the host has them: runc makes those mount points in an upper
        for d in ("upper", "overlay-work"):  # layer of this container's own; the root is read-only once they are made
            (bundle / d).mkdir()
        options += f",upperdir={bundle / 'upper'},workdir={bundle / 'overlay-work'}"
    done = subprocess.run(
        ["mount", "-t", "overlay", "overlay", "-o", options, str(rootfs)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise InfrastructureError(f"cannot stack the image layers (overlayfs): {done.stderr.strip()}")
    (bundle / "config.json").write_text(json.dumps(_config(c, layout.config()), indent=1))
    return bundle


def run(c: Container, *, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `c` to completion in the foreground; its output is returned, the container removed afterwards."""
    bundle = prepare(c)
    try:
        return subprocess.run(
            [_runc(), "run", "--bundle", str(bundle), c.name],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as e:
        raise InfrastructureError(f"container {c.name} ran past {timeout:.0f} s") from e
    finally:
        release(c.name)


def start(c: Container, log: Path) -> None:
    """Starts `c` detached, its output appended to `log`; `stop` ends it."""
    bundle = prepare(c)
    with open(log, "ab") as out:
        done = subprocess.run(
            [_runc(), "run", "--detach", "--bundle", str(bundle), c.name],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            check=False,
            timeout=60,
        )
    if done.returncode != 0:
        release(c.name)
        raise InfrastructureError(f"container {c.name} did not start; see {log}")


def stop(name: str) -> None:
    """Stops a detached container (SIGTERM, then removal) and frees its bundle."""
    runc = _runc()
    subprocess.run([runc, "kill", name, "TERM"], capture_output=True, check=False)
    subprocess.run([runc, "delete", "--force", name], capture_output=True, check=False)
    release(name)


def release(name: str) -> None:
    """Unmounts and removes a container's bundle folder if it exists (idempotent)."""
    bundle = CACHE / "run" / name
    rootfs = bundle / "rootfs"
    if rootfs.is_mount():
        subprocess.run(["umount", "-l", str(rootfs)], capture_output=True, check=False)
    shutil.rmtree(bundle, ignore_errors=True)
