"""What ran: one digest of the project's own source as this process finds it (`EnvIdentity.source`).

A git revision only says which commit a checkout started from: a tree with uncommitted edits reads `<commit>+dirty`
whatever the edits were, and evidence once named commits older than the code that made it. So a result names the
content instead: every file of the project packages where they are imported from (hotfloat; hotfloat_services and the
engines' plugin hotfloat_sglang where they are found, beside hotfloat or in its checkout, as the engines find the
plugin), named by its path in the repository and hashed the way an image build hashes its sources
(hotfloat.image.build uses these functions), so inside an image the digest is the image's own `revision`. A script of
the checkout's tools/ run as __main__ is added under its own path, since it ran too.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import sys
from pathlib import Path

PACKAGES = {
    "libs/hotfloat/hotfloat": "hotfloat",
    "services/hotfloat_services": "hotfloat_services",
    "libs/hotfloat_sglang/hotfloat_sglang": "hotfloat_sglang",
}
"""Project packages: repository folder -> package name (an image installs each under its name in site-packages)."""
HOTFLOAT = Path(__file__).resolve().parents[1]
CHECKOUT = HOTFLOAT.parents[2] if HOTFLOAT.parts[-3:] == ("libs", "hotfloat", "hotfloat") else None
"""The repository root when hotfloat runs from a checkout (libs/hotfloat/hotfloat); None when it is installed."""


def digest_of(parts: list[tuple[str, bytes]]) -> str:
    """SHA-256 over (name, data) pairs, each length-prefixed so no two inputs collide."""
    h = hashlib.sha256()
    for name, data in parts:
        raw = name.encode()
        h.update(len(raw).to_bytes(4, "big") + raw + len(data).to_bytes(8, "big") + data)
    return h.hexdigest()


def package_files(folder: Path, prefix: str) -> list[tuple[str, Path]]:
    """Every file under `folder` but caches, sorted, each named `prefix/<path under folder>`."""
    found = (p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return sorted((f"{prefix}/{p.relative_to(folder)}", p) for p in found)


def located() -> dict[str, Path]:
    """Repository folder -> where this process finds that package: where Python would import it from, else beside
    hotfloat, else in hotfloat's checkout; a package found nowhere is left out."""
    out = {}
    for folder, name in PACKAGES.items():
        try:
            spec = importlib.util.find_spec(name)
        except ValueError:  # imported without a spec (a test's stand-in module): look beside hotfloat instead
            spec = None
        places = [Path(p) for p in spec.submodule_search_locations or []] if spec else []
        for place in [*places, HOTFLOAT.parent / name, *([CHECKOUT / folder] if CHECKOUT else [])]:
            if (place / "__init__.py").is_file():
                out[folder] = place.resolve()
                break
    return out


def tool_script() -> tuple[str, Path] | None:
    """The checkout's tools/ script this process runs as __main__, if it is one."""
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    if not main or CHECKOUT is None:
        return None
    path = Path(main).resolve()
    return (str(path.relative_to(CHECKOUT)), path) if path.is_relative_to(CHECKOUT / "tools") else None


@functools.cache
def source_digest() -> str:
    """`src-sha256:<hex>` over the project's files as this process found them the first time it asked (a long-lived
    process keeps the digest of the code it started with, not of edits made under it)."""
    files = [f for folder, place in located().items() for f in package_files(place, folder)]
    if (tool := tool_script()) is not None:
        files.append(tool)
    return "src-sha256:" + digest_of([(name, path.read_bytes()) for name, path in files])
