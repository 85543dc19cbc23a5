"""Reads a built image's identity back out of its OCI layout, without running it."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

from pydantic import ValidationError

from ..errors import InputError
from ..record import Record
from .oci import Layout
from .spec import FileEntry, ImageIdentity

OUT = Path("out/images")
"""Where `make images` leaves each image's layout, as out/images/<name>."""


class LayerInfo(Record):
    """One layer's blob digest and size (uncompressed tar)."""

    digest: str
    size: int


class ImageReport(Record):
    """What `hotfloat image inspect` prints: the digest to deploy and the identity the image carries."""

    path: str
    digest: str
    """OCI manifest digest: the value in images/digests.lock and what validators deploy."""
    size: int
    """Bytes of config and layers (stored uncompressed)."""
    layers: tuple[LayerInfo, ...]
    user: str
    entrypoint: tuple[str, ...]
    identity: ImageIdentity
    files: tuple[FileEntry, ...]


def resolve(image: str) -> Path:
    """IMAGE is a layout directory, or the name of an image `make images` built under out/images."""
    for candidate in (Path(image), OUT / image):
        if (candidate / "index.json").is_file():
            return candidate
    raise InputError(f"no image layout at {image!r} (nor {OUT / image}); run `make images` first")


def inspect_image(image: str) -> ImageReport:
    """The report of one image; a layout that is not ours or is damaged is an input error."""
    path = resolve(image)
    layout = Layout(path)
    manifest, config = layout.manifest(), layout.config()
    layers = layout.layer_paths()
    if not layers or not all(p.is_file() for p in layers):
        raise InputError(f"{path}: missing layer blobs")
    found: dict[str, bytes] = {}
    with tarfile.open(layers[-1]) as tar:
        for info in tar:
            if info.name in ("etc/hotfloat/image.json", "usr/share/hotfloat/files.json") and info.isreg():
                found[info.name] = tar.extractfile(info).read()
    if "etc/hotfloat/image.json" not in found:
        raise InputError(f"{path}: not a hotfloat image (no /etc/hotfloat/image.json in its top layer)")
    try:
        identity = ImageIdentity.model_validate_json(found["etc/hotfloat/image.json"])
        files = tuple(FileEntry(**e) for e in json.loads(found.get("usr/share/hotfloat/files.json", b"[]")))
    except (ValidationError, ValueError, TypeError) as e:
        raise InputError(f"{path}: damaged image identity: {e}") from e
    cfg = config.get("config") or {}
    return ImageReport(
        path=str(path),
        digest=layout.manifest_digest(),
        size=layout.size(),
        layers=tuple(LayerInfo(digest=layer["digest"], size=layer["size"]) for layer in manifest["layers"]),
        user=str(cfg.get("User", "")),
        entrypoint=tuple(cfg.get("Entrypoint") or ()),
        identity=identity,
        files=files,
    )
