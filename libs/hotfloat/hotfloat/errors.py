"""One error root: each class knows its CLI exit code and gRPC status, so the edges translate in one place."""

from enum import IntEnum


class ExitCode(IntEnum):
    """Every `hotfloat` command exits with one of these; docs/kernel-authors.md carries the same table."""

    OK = 0
    """The command did its job; every applicable verdict is PASS."""
    FAIL = 1
    """A verdict said no: a FAIL row, scan findings, a failed check (compat, preflight, image digests)."""
    USAGE = 2
    """Bad input or usage: unknown option, unreadable or refused bundle, manifest or archive."""
    INFRASTRUCTURE = 3
    """The host could not do the work (sandbox, GPU, chain node, service, internal fault); never the candidate's."""
    NOT_APPLICABLE = 4
    """Nothing to judge: no op of the bundle runs on this device or dtype."""
    NO_DECISION = 5
    """It ran but could not decide (measurement noise, retries exhausted after infrastructure faults)."""
    INTERRUPTED = 130
    """Ctrl-C."""


class HotfloatError(Exception):
    """An infrastructure or input fault; verdicts about candidates are data, never exceptions."""

    exit_code: int = ExitCode.INFRASTRUCTURE
    grpc_status = "INTERNAL"


class InputError(HotfloatError):
    """Untrusted input (bundle, manifest, archive, payload) is malformed or refused by policy."""

    exit_code = ExitCode.USAGE
    grpc_status = "INVALID_ARGUMENT"


class ScanRefused(InputError):
    """A command that ships or names a bundle (`hash`, `chain package`, `chain submit`) met one scan refuses: it exits
    as `scan` would, so a bundle that can never run is never committed."""

    exit_code = ExitCode.FAIL


class BundleError(InputError):
    """A bundle directory or its manifest breaks the bundle contract."""


class UnknownSlotError(InputError):
    """A name does not resolve to exactly one registered slot."""


class InfrastructureError(HotfloatError):
    """The host could not do the work (missing tool, dead child, broken device); never the candidate's fault."""

    exit_code = ExitCode.INFRASTRUCTURE
    grpc_status = "UNAVAILABLE"


def no_gpu(command: str) -> InfrastructureError:
    """The error for a CUDA run asked of a host where no GPU is visible, in the same words from every command."""
    return InfrastructureError(
        f"{command} --device cuda: no GPU is visible here; use --device cpu, or run it on a GPU host"
    )


class SandboxUnavailable(InfrastructureError):
    """The candidate sandbox cannot be established, so verification refuses to run (fail closed)."""

    grpc_status = "FAILED_PRECONDITION"
