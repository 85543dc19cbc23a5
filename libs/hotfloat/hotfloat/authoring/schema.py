"""The bundle format as JSON Schema, generated from the pydantic models that validate bundles (never hand-written)."""

from __future__ import annotations

from typing import Any

from .. import ABI_VERSION
from ..bundle.manifest import ARCHITECTURES, Manifest, OpMetadata
from ..slots import DTYPES, SLOTS


def bundle_schema(part: str = "all") -> dict[str, Any]:
    """manifest.toml's schema, metadata/*.json's schema, or both under one document's $defs."""
    manifest = Manifest.model_json_schema()
    metadata = OpMetadata.model_json_schema()
    # Values the models check in validators (so pydantic cannot see them) are added as enums for editors.
    op = manifest["$defs"]["OpEntry"]["properties"]
    op["slot"]["enum"] = sorted(SLOTS)
    op["dtypes"]["items"]["enum"] = list(DTYPES)
    op["architectures"]["items"]["enum"] = list(ARCHITECTURES)
    manifest["properties"]["abi_version"]["const"] = ABI_VERSION
    metadata["properties"]["dtypes"]["anyOf"][0]["items"]["enum"] = list(DTYPES)
    manifest["title"], metadata["title"] = "hotfloat manifest.toml", "hotfloat metadata/*.json"
    if part == "manifest":
        return manifest
    if part == "metadata":
        return metadata
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "hotfloat bundle",
        "properties": {"manifest.toml": manifest, "metadata/*.json": metadata},
    }
