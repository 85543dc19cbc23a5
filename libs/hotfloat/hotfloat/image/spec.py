"""Image records: the spec a maintainer writes per image, and the identity every built image carries."""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from ..errors import InputError
from ..record import Record


class Flavor(Record):
    """One build variant of an image (cpu for CI, cuda for GPU hosts), chosen by `make images FLAVOR=...`."""

    python_lock: str
    """Hashed pip lock (relative to the image folder) that this flavour installs, nothing else."""
    require: dict[str, str] = Field(default_factory=dict)
    """Distribution -> exact version the lock must pin (e.g. the Torch/CUDA pair); checked before any build."""
    no_deps: tuple[str, ...] = ()
    """Distributions locked without their declared dependencies (SGLang: most of its set is serving extras the
    engine never imports); their Requires-Dist are not checked, everyone else's still are."""


class ImageSpec(Record):
    """images/<name>/image.toml: what goes into one image besides the shared Debian base."""

    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    summary: str
    entrypoint: tuple[str, ...]
    """The service this image runs by default (arguments may follow at run time)."""
    flavors: dict[str, Flavor]
    """Flavour name -> its Python stack; 'cpu' must exist so CI can build every image."""
    user: int = 10001
    """The non-root uid and gid the image runs as."""
    env: dict[str, str] = Field(default_factory=dict)

    @field_validator("flavors")
    @classmethod
    def _cpu_flavor(cls, v: dict[str, Flavor]) -> dict[str, Flavor]:
        if "cpu" not in v:
            raise ValueError("every image needs a 'cpu' flavour")
        return v

    def flavor(self, name: str) -> Flavor:
        """This image's variant `name`; an image without it falls back to cpu (only the worker carries CUDA)."""
        return self.flavors.get(name, self.flavors["cpu"])


def load_spec(path: Path) -> ImageSpec:
    """Reads and validates an image.toml; a bad spec is an input error, not a crash."""
    try:
        return ImageSpec(**tomllib.loads(path.read_text()))
    except (OSError, tomllib.TOMLDecodeError, ValidationError, TypeError) as e:
        raise InputError(f"bad image spec {path}: {e}") from e


class FileEntry(Record):
    """One regular file or link in the image, for the SBOM-like file list."""

    path: str
    size: int
    sha256: str | None = None
    """Content hash of a regular file; None for links."""
    link: str | None = None
    """Target of a symbolic or hard link."""
    layer: int
    """Index of the layer that adds it (0 is the Debian base)."""


class ImageIdentity(Record):
    """/etc/hotfloat/image.json: what an image is, readable by `hotfloat image inspect` and by `hotfloat env` inside."""

    name: str
    flavor: str
    revision: str
    """Content revision of the project sources in the image ('src-sha256:...'); independent of commits, so
    digests.lock can be committed alongside the sources it describes."""
    inputs_digest: str
    """SHA-256 over the spec, the locks and the sources: equal inputs must give an equal image digest."""
    source_date_epoch: int
    """Every timestamp in the image; fixed so rebuilds are byte-identical."""
    debian: dict[str, str]
    """Debian package -> version installed in the base layer."""
    python: dict[str, str]
    """Python distribution -> version installed from the image's lock."""
    entrypoint: tuple[str, ...]
    files: str = "/usr/share/hotfloat/files.json"
    """Where the image keeps its file list (FileEntry records)."""
