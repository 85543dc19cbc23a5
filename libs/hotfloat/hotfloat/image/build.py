"""Builds one image as an OCI layout from three layers: the shared Debian base, the locked Python stack (both
written by layers.py), and the project's own sources with the venv and identity files that make it an image."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from ..env.source import PACKAGES, digest_of, package_files
from ..errors import InputError
from .layers import APP, SITE, epoch_for, load_base, python_layer
from .locks import dpkg_status, python_pins
from .oci import LAYER_TYPE, Layout, file_entries, tar_directory
from .spec import ImageIdentity, ImageSpec

SOURCES = PACKAGES
"""Project packages every image ships: repository folder -> package folder in site-packages."""


def source_files(repo: Path) -> list[tuple[str, Path]]:
    """The project files an image ships, sorted, without caches: the files a process running from them digests
    (hotfloat.env.source), so the image's `revision` is the source digest its processes report."""
    return [f for entry in SOURCES for f in package_files(repo / entry, entry)]


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
