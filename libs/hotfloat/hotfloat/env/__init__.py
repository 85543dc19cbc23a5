"""Environment identity: what a result ran on, so results from different environments are never compared."""

from .probes import IMAGE_IDENTITY_FILE, collect
from .record import MATTERS, EnvIdentity, GpuReading

__all__ = ["IMAGE_IDENTITY_FILE", "MATTERS", "EnvIdentity", "GpuReading", "collect"]
