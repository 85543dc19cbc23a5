"""images/digests.lock: the manifest digest each image must rebuild to; `make images-check` compares against it."""

from __future__ import annotations

from pathlib import Path

from ..bundle.bounded import read_file
from ..errors import HotfloatError, InputError
from ..record import Record
from ..verdict import Status
from .oci import Layout

_HEADER = (
    "# OCI manifest digests of the images built from this tree with SOURCE_DATE_EPOCH from images/base/base.toml.\n"
    "# `make images-check` rebuilds and fails on any difference; `make images-lock` rewrites this file.\n"
)
LOCK_BYTES = 1 << 20
"""A line per image; anything larger is not this file."""


class DigestMismatch(HotfloatError):
    """A rebuilt image is not byte-identical to the digest on record: the build is not reproducible or inputs moved."""

    exit_code = 1
    grpc_status = "FAILED_PRECONDITION"


class DigestRow(Record):
    """One image's digest on record beside the one just built."""

    image: str
    """'name:flavor', e.g. 'compiler:cpu'."""
    locked: str | None
    built: str
    status: Status


def read(lock: Path) -> dict[str, str]:
    if not lock.exists():
        return {}
    try:
        text = read_file(lock, LOCK_BYTES).decode()
    except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
        raise InputError(f"{lock}: not a digests lock: {e}") from None
    out = {}
    for line in text.splitlines():
        if line.strip() and not line.startswith("#"):
            parts = line.split()
            if len(parts) != 2 or not parts[1].startswith("sha256:"):
                raise InputError(f"{lock}: expected 'name:flavor sha256:...', got {line!r}")
            out[parts[0]] = parts[1]
    return out


def _ref(layout: Path) -> str:
    index = Layout(layout).read_json(layout / "index.json")
    ref = index["manifests"][0].get("annotations", {}).get("org.opencontainers.image.ref.name", "")
    return ref.removeprefix("hotfloat-") or layout.name


def check(lock: Path, layouts: tuple[Path, ...]) -> list[DigestRow]:
    locked = read(lock)
    rows = []
    for layout in layouts:
        name, built = _ref(layout), Layout(layout).manifest_digest()
        want = locked.get(name)
        rows.append(
            DigestRow(image=name, locked=want, built=built, status=Status.PASS if want == built else Status.FAIL)
        )
    return rows


def update(lock: Path, layouts: tuple[Path, ...]) -> list[DigestRow]:
    locked = read(lock)
    rows = []
    for layout in layouts:
        name, built = _ref(layout), Layout(layout).manifest_digest()
        rows.append(DigestRow(image=name, locked=built, built=built, status=Status.PASS))
        locked[name] = built
    lock.write_text(_HEADER + "".join(f"{n} {d}\n" for n, d in sorted(locked.items())))
    return rows


def raise_on_mismatch(rows: list[DigestRow]) -> None:
    if bad := [r for r in rows if r.status is not Status.PASS]:
        raise DigestMismatch(
            "digest differs from images/digests.lock: "
            + ", ".join(f"{r.image} built {r.built} locked {r.locked}" for r in bad)
        )
