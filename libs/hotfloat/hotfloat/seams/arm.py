"""Arming: the router an engine process starts with, from explicit paths or from its environment; a bundle that
fails to load (or is not the identity expected) raises SeamLoadError, never a silent fallback to stock."""

from __future__ import annotations

import os

from ..bundle import Bundle, load_bundle
from ..errors import HotfloatError
from .audit import AuditConfig
from .errors import SeamLoadError
from .router import SeamRouter

ENV_BUNDLE = "HOTFLOAT_ARMED_BUNDLE"
"""Path of the bundle directory to arm; unset or empty means null-armed (every call goes stock)."""
ENV_IDENTITY = "HOTFLOAT_ARMED_IDENTITY"
"""Optional expected bundle identity; a different bundle at the path is a load failure."""
ENV_TWIN_OF = "HOTFLOAT_TWIN_OF"
"""Path of a candidate bundle whose domains this engine nudges (a twin); its code is never imported."""
ENV_TWIN_IDENTITY = "HOTFLOAT_TWIN_IDENTITY"
"""Optional expected identity of the twin's candidate bundle."""
ENV_HANDICAP = "HOTFLOAT_HANDICAP_US"
"""Microseconds of delay after every activation.silu_and_mul call (calibration's positive control)."""
ENV_ATTENTION = "HOTFLOAT_ATTENTION_BACKEND"
"""The engine's SGLang attention backend: the plugin hooks only that backend's seams (unset: every backend's)."""


def arm(
    path: str | os.PathLike | None,
    *,
    identity: str | None = None,
    workdir: str | None = None,
    twin_of: str | os.PathLike | None = None,
    twin_identity: str | None = None,
    audit: AuditConfig | None = None,
    handicap_us: float = 0.0,
) -> SeamRouter:
    """A router for the bundle at `path` (null-armed for None), a twin of the bundle at `twin_of` when given; any
    load failure raises SeamLoadError."""
    return SeamRouter(
        _load(path, identity, "armed"),
        workdir=workdir,
        twin_of=_load(twin_of, twin_identity, "twin's"),
        audit=audit,
        handicap_us=handicap_us,
    )


def _load(path: str | os.PathLike | None, identity: str | None, what: str) -> Bundle | None:
    if not path:
        return None
    try:
        bundle = load_bundle(path)
    except HotfloatError as e:
        raise SeamLoadError(f"{what} bundle {path}: {e}") from None
    if identity and bundle.identity != identity:
        raise SeamLoadError(f"{what} bundle {path} has identity {bundle.identity}, expected {identity}")
    return bundle


def arm_from_env(environ: dict | None = None, audit: AuditConfig | None = None) -> SeamRouter:
    """A router armed from HOTFLOAT_ARMED_BUNDLE (and HOTFLOAT_ARMED_IDENTITY), a twin when HOTFLOAT_TWIN_OF names
    a candidate, handicapped per HOTFLOAT_HANDICAP_US, as every engine process does at start; the audit's settings
    hold its secret key and come from the engine's control channel, never from the environment."""
    env = os.environ if environ is None else environ
    return arm(
        env.get(ENV_BUNDLE) or None,
        identity=env.get(ENV_IDENTITY) or None,
        twin_of=env.get(ENV_TWIN_OF) or None,
        twin_identity=env.get(ENV_TWIN_IDENTITY) or None,
        audit=audit,
        handicap_us=float(env.get(ENV_HANDICAP) or 0),
    )
