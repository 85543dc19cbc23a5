"""Admission of a build's cubins: the deviceless checks, then the Driver-API load, launch and verification
(`admission.admit`), and how much of verification a worker runs (`admission.scope`). Only the records load here: the
image code names the scope and the ledger reads the report without pulling the sandbox, compiler and bundle reader."""

from .records import AdmissionReport

__all__ = ["AdmissionReport"]
