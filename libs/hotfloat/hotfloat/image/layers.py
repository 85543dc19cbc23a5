"""The two locked layers under every image's project layer: the shared Debian base and a Python stack.

Each step checks what it produced against its lock, so a resolver can never silently swap a package (e.g. the
Torch/CUDA stack): a difference stops the build with the list of differing packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

from pydantic import Field, ValidationError

from ..errors import InfrastructureError, InputError
from ..record import Record
from .locks import (
    debian_pins,
    differences,
    dpkg_status,
    installed_python,
    lock_without,
    python_pins,
    unmet_requirements,
    write_debian_lock,
)
from .oci import normalise_tar, tar_directory

APP = "/opt/hotfloat"
"""A venv over Debian's python3.11: a real prefix, so sandboxed children (`python -E`, binds of sys.prefix and
site-packages) find the same packages without PYTHONPATH."""
SITE = f"{APP}/lib/python3.11/site-packages"
WHEELS = Path("/opt/wheels")
"""The local wheel folder `make setup` uses (the CPU torch wheel lives there); hashes still decide."""


class BaseSpec(Record):
    """images/base/base.toml: the Debian minbase every image starts from."""

    suite: str
    mirror: str
    packages: tuple[str, ...]
    """Packages beyond minbase; everything they pull in is recorded in debian.lock."""
    user: int = 10001
    source_date_epoch: int = Field(gt=0)
    """Default SOURCE_DATE_EPOCH for every image (the environment variable overrides it)."""


def load_base(path: Path) -> BaseSpec:
    try:
        return BaseSpec(**tomllib.loads(path.read_text()))
    except (OSError, tomllib.TOMLDecodeError, ValidationError, TypeError) as e:
        raise InputError(f"bad base spec {path}: {e}") from e


def epoch_for(base: BaseSpec) -> int:
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if raw is None or raw == "":
        return base.source_date_epoch
    if not raw.isdigit():
        raise InputError(f"SOURCE_DATE_EPOCH must be an integer, got {raw!r}")
    return int(raw)


def _run(argv: list[str], what: str, **kw) -> None:
    print(f"image: {what}", file=sys.stderr, flush=True)
    done = subprocess.run(argv, capture_output=True, text=True, check=False, **kw)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise InfrastructureError(f"{what} failed (exit {done.returncode}):\n{tail}")


def build_base(spec_path: Path, lock: Path, out: Path, *, update_lock: bool = False, cache: Path | None = None) -> dict:
    """Bootstraps the Debian base layer tar with mmdebstrap and checks every installed package against the lock."""
    base = load_base(spec_path)
    epoch = epoch_for(base)
    if shutil.which("mmdebstrap") is None:
        raise InfrastructureError("mmdebstrap is not installed (run tools/image_deps.sh)")
    user = (
        f'echo "hotfloat:x:{base.user}:{base.user}:hotfloat:/nonexistent:/usr/sbin/nologin" >> "$1/etc/passwd"; '
        f'echo "hotfloat:x:{base.user}:" >> "$1/etc/group"; rm -f "$1/var/cache/ldconfig/aux-cache"'
    )
    hooks = ["--customize-hook", user]
    if cache is not None:  # keep downloaded .debs between builds; the versions are still checked against the lock
        cache.mkdir(parents=True, exist_ok=True)
        hooks = [
            "--skip=download/empty",
            "--setup-hook",
            'mkdir -p "$1/var/cache/apt/archives"',
            "--setup-hook",
            f"sync-in {cache} /var/cache/apt/archives",
            "--customize-hook",
            f"sync-out /var/cache/apt/archives {cache}",
            "--customize-hook",
            'rm -f "$1"/var/cache/apt/archives/*.deb',
            *hooks,
        ]
    with tempfile.TemporaryDirectory(prefix="hotfloat-base-") as tmp:
        raw = Path(tmp) / "rootfs.tar"
        _run(
            [
                "mmdebstrap",
                "--quiet",
                "--mode=root",
                "--variant=minbase",
                f"--include={','.join(base.packages)}",
                *hooks,
                base.suite,
                str(raw),
                base.mirror,
            ],
            "mmdebstrap (Debian minbase)",
            env={**os.environ, "SOURCE_DATE_EPOCH": str(epoch)},
        )
        normalise_tar(raw, out, epoch)
    with tarfile.open(out) as tar:
        status = tar.extractfile("var/lib/dpkg/status")
        packages = dpkg_status(status.read().decode()) if status else {}
    if update_lock:
        write_debian_lock(
            lock,
            packages,
            f"Debian {base.suite} minbase + {' '.join(base.packages)}: "
            "`make images-lock` rewrites it; builds fail when apt resolves anything else",
        )
    elif diff := differences("debian", debian_pins(lock), packages):
        raise InputError(
            "the Debian base differs from its lock (run `make images-lock` to accept):\n" + "\n".join(diff)
        )
    return packages


def python_layer(
    lock: Path,
    out: Path,
    epoch: int,
    *,
    below: Path | None = None,
    wheels: Path | None = None,
    no_deps: tuple[str, ...] = (),
) -> dict[str, str]:
    """Installs exactly the lock's wheels (hashes required, no resolution) as a layer; returns what it installed.

    With `below` (the shared stack layer), the stack's pins must appear unchanged in the lock; only the rest is
    installed here, and the union must satisfy every requirement. `wheels` restricts pip to one local folder
    (offline); by default pip's configured indexes and /opt/wheels are used. `no_deps`: the flavour's distributions
    whose own requirements are not checked.
    """
    where = (
        ["--no-index", "--find-links", str(wheels)]
        if wheels
        else (["--find-links", str(WHEELS)] if WHEELS.is_dir() else [])
    )
    pins = python_pins(lock)
    text = lock.read_text()
    with tempfile.TemporaryDirectory(prefix="hotfloat-py-") as tmp:
        work = Path(tmp)
        lower: dict[str, str] = {}
        if below is not None:
            lower = installed_python(_stack_metadata(below, work / "below"))
            if drift := [f"{n}: stack {v}, lock {pins.get(n)}" for n, v in lower.items() if pins.get(n) != v]:
                raise InputError(f"{lock} does not keep the shared stack's pins: " + "; ".join(drift))
            text = lock_without(text, set(lower))
        (work / "lock.txt").write_text(text)
        root = work / "root"
        site = root / SITE.lstrip("/")
        wanted = {n: v for n, v in pins.items() if n not in lower}
        _run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                "--require-hashes",
                "--only-binary=:all:",
                "--no-compile",
                "--no-warn-script-location",
                "--target",
                str(site),
                *where,
                "-r",
                str(work / "lock.txt"),
            ],
            f"pip install {lock.parent.name}/{lock.name} ({len(wanted)} pinned distributions)",
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        )
        shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts carry this host's interpreter path
        installed = installed_python(site)
        if diff := differences("python", wanted, installed):
            raise InputError(f"installed Python packages differ from {lock}:\n" + "\n".join(diff))
        sites = [site, work / "below"] if below is not None else [site]
        if unmet := unmet_requirements(*sites, no_deps=no_deps):
            raise InputError(f"{lock} is not self-consistent:\n" + "\n".join(unmet))
        tar_directory(root, out, epoch)
    return {**lower, **installed}


def _stack_metadata(layer: Path, into: Path) -> Path:
    """Extracts only the dist-info METADATA files of a python layer, enough to know what it installed."""
    into.mkdir(parents=True)
    prefix = SITE.lstrip("/") + "/"
    with tarfile.open(layer) as tar:
        for info in tar:
            rel = info.name.removeprefix(prefix)
            if info.isreg() and rel != info.name and rel.count("/") == 1 and rel.endswith(".dist-info/METADATA"):
                target = into / rel
                target.parent.mkdir(exist_ok=True)
                target.write_bytes(tar.extractfile(info).read())
    return into
