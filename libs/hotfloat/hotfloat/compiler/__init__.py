"""Deviceless builds of a bundle's triton/cute kernels into gated, declared cubins."""

from .builder import build_bundle
from .record import BuildRecord, KernelArtifact, load_build

__all__ = ["BuildRecord", "KernelArtifact", "build_bundle", "load_build"]
