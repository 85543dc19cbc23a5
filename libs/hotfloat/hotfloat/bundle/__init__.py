"""Bundles: manifest, contract checks, canonical identity and archives."""

from .archive import pack, unpack
from .identity import bundle_identity
from .layout import Bundle, Op, bundle_from_files, load_bundle
from .manifest import Manifest, OpEntry, OpMetadata

__all__ = [
    "Bundle",
    "Manifest",
    "Op",
    "OpEntry",
    "OpMetadata",
    "bundle_from_files",
    "bundle_identity",
    "load_bundle",
    "pack",
    "unpack",
]
