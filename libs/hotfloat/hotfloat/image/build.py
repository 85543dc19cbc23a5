"""Builds one image as an OCI layout from three layers: the shared Debian base, the locked Python stack, the project.

Each step checks what it produced against its lock, so a resolver can never silently swap a package (e.g. the
Torch/CUDA stack): a difference stops the build with the list of differing packages.
"""

from __future__ import annotations

import hashlib
import json
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
from .oci import LAYER_TYPE, Layout, file_entries, normalise_tar, tar_directory
from .spec import ImageIdentity, ImageSpec

SOURCES = {
    "libs/hotfloat/hotfloat": "hotfloat",
    "services/hotfloat_services": "hotfloat_services",
    "libs/hotfloat_sglang/hotfloat_sglang": "hotfloat_sglang",
}
"""Project packages every image ships: repository folder -> package folder in site-packages."""
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


def source_files(repo: Path) -> list[tuple[str, Path]]:
    """The project files an image ships, sorted, without caches."""
    files = []
    for entry in SOURCES:
        for p in sorted(p for p in (repo / entry).rglob("*") if p.is_file()):
            if "__pycache__" not in p.parts and p.suffix != ".pyc":
                files.append((str(p.relative_to(repo)), p))
    return files


def digest_of(parts: list[tuple[str, bytes]]) -> str:
    """SHA-256 over (name, data) pairs, each length-prefixed so no two inputs collide."""
    h = hashlib.sha256()
    for name, data in parts:
        raw = name.encode()
        h.update(len(raw).to_bytes(4, "big") + raw + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def _place(src: Path, dst: Path) -> None:
    """Hard-links a finished layer when possible (Bazel outputs are large and read-only), else copies it."""
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def build_image(
    spec: ImageSpec,
    flavor: str,
    *,
    repo: Path,
    image_dir: Path,
    base: tuple[Path, Path, Path],
    stack: tuple[Path, Path] | None,
    out: Path,
    wheels: Path | None = None,
) -> str:
    """Writes the image as an OCI layout at `out`; returns its manifest digest.

    `base` is (base.toml, debian.lock, base layer tar); `stack` is (stack.lock, stack layer tar), used when the
    flavour's lock keeps every stack pin (the cpu flavours) and skipped otherwise (the cuda worker).
    """
    base_spec, base_lock, base_tar = base
    epoch = epoch_for(load_base(base_spec))
    chosen = spec.flavor(flavor)
    lock = image_dir / chosen.python_lock
    pins = python_pins(lock)
    if wrong := [
        f"{n}: lock pins {pins.get(n)}, spec requires {v}" for n, v in chosen.require.items() if pins.get(n) != v
    ]:
        raise InputError(f"{lock} breaks the {flavor} flavour's required pins: " + "; ".join(wrong))
    if stack is not None and not python_pins(stack[0]).items() <= pins.items():
        stack = None
    sources = source_files(repo)
    revision = "src-sha256:" + digest_of([(rel, p.read_bytes()) for rel, p in sources])
    inputs = "sha256:" + digest_of(
        [
            ("base.toml", base_spec.read_bytes()),
            ("debian.lock", base_lock.read_bytes()),
            ("stack.lock", stack[0].read_bytes() if stack else b""),
            ("image.toml", (image_dir / "image.toml").read_bytes()),
            ("python.lock", lock.read_bytes()),
            ("flavor", flavor.encode()),
            ("revision", revision.encode()),
            ("epoch", str(epoch).encode()),
        ]
    )
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    layout = Layout(out)
    with tempfile.TemporaryDirectory(prefix="hotfloat-img-", dir=out.parent) as tmp:
        work = Path(tmp)
        names = ["base.tar", *(["stack.tar"] if stack else []), "python.tar", "app.tar"]
        _place(base_tar, work / "base.tar")
        with tarfile.open(work / "base.tar") as tar:
            status = tar.extractfile("var/lib/dpkg/status")
            debian = dpkg_status(status.read().decode()) if status else {}
        if stack:
            _place(stack[1], work / "stack.tar")
        python = python_layer(
            lock,
            work / "python.tar",
            epoch,
            below=work / "stack.tar" if stack else None,
            wheels=wheels,
            no_deps=chosen.no_deps,
        )
        print("image: file list", file=sys.stderr, flush=True)
        entries = [e for i, name in enumerate(names[:-1]) for e in file_entries(work / name, i)]
        app = work / "app"
        for rel, path in sources:
            top = next(e for e in SOURCES if rel.startswith(e + "/"))
            target = app / SITE.lstrip("/") / SOURCES[top] / rel.removeprefix(top + "/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        _venv_skeleton(app)
        for mountpoint in ("run/hotfloat", "work", "bundle"):
            (app / mountpoint).mkdir(parents=True)
        entries += _tree_entries(app, len(names) - 1)
        identity = ImageIdentity(
            name=spec.name,
            flavor=flavor,
            revision=revision,
            inputs_digest=inputs,
            source_date_epoch=epoch,
            debian=debian,
            python=python,
            entrypoint=spec.entrypoint,
        )
        (app / "etc/hotfloat").mkdir(parents=True)
        (app / "etc/hotfloat/image.json").write_text(identity.model_dump_json(indent=1) + "\n")
        (app / "usr/share/hotfloat").mkdir(parents=True)
        (app / "usr/share/hotfloat/files.json").write_text(json.dumps(entries, separators=(",", ":")) + "\n")
        tar_directory(app, work / "app.tar", epoch)
        layers = [layout.add_file(work / name, LAYER_TYPE) for name in names]
    env = {
        "PATH": f"{APP}/bin:/usr/local/bin:/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/tmp",
        "HOTFLOAT_IMAGE_IDENTITY": "/etc/hotfloat/image.json",
        **spec.env,
    }
    config = {
        "User": f"{spec.user}:{spec.user}",
        "Env": [f"{k}={v}" for k, v in sorted(env.items())],
        "Entrypoint": list(spec.entrypoint),
        "WorkingDir": "/tmp",
        "Labels": {
            "org.opencontainers.image.revision": revision,
            "org.hotfloat.inputs": inputs,
            "org.opencontainers.image.title": f"hotfloat-{spec.name}",
        },
    }
    return layout.write_image(layers, config, epoch, f"hotfloat-{spec.name}:{flavor}")


def _venv_skeleton(app: Path) -> None:
    """pyvenv.cfg, the interpreter links and the `hotfloat` launcher that make APP a venv over Debian's python3."""
    bin_dir = app / APP.lstrip("/") / "bin"
    bin_dir.mkdir(parents=True)
    (app / APP.lstrip("/") / "pyvenv.cfg").write_text(
        "home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.11\n"
    )
    for name in ("python", "python3", "python3.11"):
        (bin_dir / name).symlink_to("/usr/bin/python3.11")
    launcher = bin_dir / "hotfloat"
    launcher.write_text(
        f"#!/bin/sh\n# The hotfloat CLI from the image's own sources and locked stack.\n"
        f'exec {APP}/bin/python3 -c "from hotfloat.cli.main import main; main()" "$@"\n'
    )
    launcher.chmod(0o755)


def _tree_entries(root: Path, layer: int) -> list[dict]:
    """File-list entries of a directory about to become a layer (the identity files cannot list themselves)."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = "/" + str(path.relative_to(root))
        if path.is_symlink():
            out.append({"path": rel, "size": 0, "link": os.readlink(path), "layer": layer})
        elif path.is_file():
            out.append(
                {
                    "path": rel,
                    "size": path.stat().st_size,
                    "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                    "layer": layer,
                }
            )
    return out
