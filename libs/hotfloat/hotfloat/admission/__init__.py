"""Admission of a build's cubins: the deviceless checks, then the Driver-API load, launch and verification."""

from .admit import admit, gpu_missing
from .records import AdmissionReport

__all__ = ["AdmissionReport", "admit", "gpu_missing"]
