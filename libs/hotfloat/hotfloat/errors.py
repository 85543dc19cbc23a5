"""One error root: each class knows its CLI exit code and gRPC status, so the edges translate in one place."""


class HotfloatError(Exception):
    """An infrastructure or input fault; verdicts about candidates are data, never exceptions."""

    exit_code = 1
    grpc_status = "INTERNAL"


class InputError(HotfloatError):
    """Untrusted input (bundle, manifest, archive, payload) is malformed or refused by policy."""

    exit_code = 2
    grpc_status = "INVALID_ARGUMENT"


class BundleError(InputError):
    """A bundle directory or its manifest breaks the bundle contract."""


class UnknownSlotError(InputError):
    """A name does not resolve to exactly one registered slot."""


class InfrastructureError(HotfloatError):
    """The host could not do the work (missing tool, dead child, broken device); never the candidate's fault."""

    exit_code = 1
    grpc_status = "UNAVAILABLE"


class SandboxUnavailable(InfrastructureError):
    """The candidate sandbox cannot be established, so verification refuses to run (fail closed)."""

    grpc_status = "FAILED_PRECONDITION"
