"""Seam faults, rooted in hotfloat.errors so the CLI and services translate them like every other error."""

from ..errors import BundleError, InfrastructureError


class SeamLoadError(BundleError):
    """The armed bundle could not be loaded or imported in this engine process; the engine must not start."""


class RankMismatchError(InfrastructureError):
    """Ranks of one engine armed different bundles (or some none): mixed implementations would diverge, so abort."""
