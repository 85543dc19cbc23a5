"""Deterministic OCI image layouts: normalised layer tars, content-addressed blobs, no compression.

Reproducibility comes from here: entries sorted, every timestamp clamped to SOURCE_DATE_EPOCH, owners numeric,
no per-build metadata; so equal inputs give an equal manifest digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InputError

LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar"
MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
_CHUNK = 1 << 20


@dataclass(frozen=True)
class Blob:
    """A stored blob: digest ('sha256:...'), size and media type, i.e. an OCI descriptor."""

    digest: str
    size: int
    media_type: str

    def descriptor(self) -> dict:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size}


def _normalise(info: tarfile.TarInfo, epoch: int) -> tarfile.TarInfo:
    info.mtime = min(int(info.mtime), epoch)
    info.uname = info.gname = ""
    info.pax_headers = {}
    info.mode &= 0o7777
    return info


def tar_directory(root: Path, out: Path, epoch: int, owner: int = 0) -> None:
    """Writes `root`'s tree as a layer tar in sorted order, owned by `owner`, times clamped to `epoch`."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for rel in _walk(root):
            info = tar.gettarinfo(str(root / rel), arcname=rel)
            info.uid = info.gid = owner
            _normalise(info, epoch)
            if info.isreg():
                with open(root / rel, "rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)


def _walk(root: Path) -> list[str]:
    """Every path under root, relative, in plain sorted order (parents sort before their children)."""
    paths = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath).relative_to(root)
        paths += [str(base / name) if str(base) != "." else name for name in (*dirnames, *filenames)]
    return sorted(paths)


def normalise_tar(src: Path, out: Path, epoch: int) -> None:
    """Rewrites a rootfs tar (e.g. mmdebstrap's) with our normalisation; device nodes are dropped (runtimes mount
    /dev), and so is Python bytecode: Debian's py3compile output differs between identical runs."""
    with tarfile.open(src) as tin, tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tout:
        members = sorted(
            (m for m in tin if not (m.ischr() or m.isblk() or m.isfifo() or _bytecode(m.name))), key=lambda m: m.name
        )
        for info in members:
            info.name = info.name.removeprefix("./").rstrip("/") or "."
            if info.name == ".":
                continue
            data = tin.extractfile(info) if info.isreg() else None
            tout.addfile(_normalise(info, epoch), data)


def _bytecode(name: str) -> bool:
    return name.endswith(".pyc") or "/__pycache__" in name or name.startswith("__pycache__")


def file_entries(layer: Path, index: int) -> Iterator[dict]:
    """Regular files and links of a layer tar with their sizes and hashes, for the image's file list."""
    with tarfile.open(layer) as tar:
        for info in tar:
            if info.isreg():
                digest = hashlib.sha256()
                f = tar.extractfile(info)
                while chunk := f.read(_CHUNK):
                    digest.update(chunk)
                yield {"path": "/" + info.name, "size": info.size, "sha256": digest.hexdigest(), "layer": index}
            elif info.issym() or info.islnk():
                yield {"path": "/" + info.name, "size": 0, "link": info.linkname, "layer": index}


class Layout:
    """An OCI image layout directory (oci-layout, index.json, blobs/sha256/...)."""

    def __init__(self, root: Path):
        self.root = root

    def blob_path(self, digest: str) -> Path:
        algo, _, hexdigest = digest.partition(":")
        if algo != "sha256" or len(hexdigest) != 64 or not all(c in "0123456789abcdef" for c in hexdigest):
            raise InputError(f"bad blob digest {digest!r}")
        return self.root / "blobs" / "sha256" / hexdigest

    def add_file(self, path: Path, media_type: str) -> Blob:
        """Moves a file into the blob store under its digest."""
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK):
                digest.update(chunk)
        blob = Blob(f"sha256:{digest.hexdigest()}", path.stat().st_size, media_type)
        target = self.blob_path(blob.digest)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(path), target)
        return blob

    def add_json(self, data: dict, media_type: str) -> Blob:
        raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode()
        blob = Blob(f"sha256:{hashlib.sha256(raw).hexdigest()}", len(raw), media_type)
        target = self.blob_path(blob.digest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)
        return blob

    def write_image(self, layers: list[Blob], config: dict, epoch: int, ref: str) -> str:
        """Writes config, manifest and index; returns the manifest digest, the image's identity.

        Layers are stored uncompressed, so each layer's diff id is its blob digest.
        """
        diff_ids = [layer.digest for layer in layers]
        created = _iso(epoch)
        cfg = self.add_json(
            {
                "architecture": "amd64",
                "os": "linux",
                "created": created,
                "config": config,
                "rootfs": {"type": "layers", "diff_ids": diff_ids},
            },
            CONFIG_TYPE,
        )
        manifest = self.add_json(
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": cfg.descriptor(),
                "layers": [b.descriptor() for b in layers],
            },
            MANIFEST_TYPE,
        )
        (self.root / "oci-layout").write_text('{"imageLayoutVersion":"1.0.0"}')
        index = {
            "schemaVersion": 2,
            "manifests": [{**manifest.descriptor(), "annotations": {"org.opencontainers.image.ref.name": ref}}],
        }
        (self.root / "index.json").write_text(json.dumps(index, sort_keys=True, separators=(",", ":")))
        return manifest.digest

    def read_json(self, path: Path) -> dict:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise InputError(f"not an OCI image layout: {path}: {e}") from e
        if not isinstance(data, dict):
            raise InputError(f"not an OCI image layout: {path} is not a JSON object")
        return data

    def manifest_digest(self) -> str:
        manifests = self.read_json(self.root / "index.json").get("manifests") or []
        if len(manifests) != 1 or not isinstance(manifests[0], dict):
            raise InputError(f"{self.root}: expected exactly one image in index.json")
        return str(manifests[0].get("digest"))

    def manifest(self) -> dict:
        return self.read_json(self.blob_path(self.manifest_digest()))

    def config(self) -> dict:
        return self.read_json(self.blob_path(self.manifest()["config"]["digest"]))

    def layer_paths(self) -> list[Path]:
        return [self.blob_path(layer["digest"]) for layer in self.manifest()["layers"]]

    def size(self) -> int:
        """Bytes of every blob the image references (layers are stored uncompressed)."""
        m = self.manifest()
        return m["config"]["size"] + sum(layer["size"] for layer in m["layers"])


def _iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
