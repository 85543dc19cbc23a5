"""Real servers for the service tests: in-process threads or separate processes, on short-lived Unix sockets."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from hotfloat.bundle import load_bundle, pack

TOKEN = "hotfloat-test-token-0123456789"
QUICK = {"verify_max_shapes": 1, "verify_dtypes": ("fp32",)}
"""Admission in tests verifies one shape in one dtype: the protocol is verify's to test, the wiring is ours."""


@pytest.fixture
def sockdir():
    """A short directory for sockets (a Unix socket path must stay under ~100 bytes, pytest's tmp_path may not)."""
    d = Path(tempfile.mkdtemp(prefix="hf-", dir="/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def token():
    """The deployment token the `services` fixture's servers require."""
    return TOKEN


@pytest.fixture
def token_file(sockdir):
    p = sockdir / "token"
    p.write_text(TOKEN)
    return p


@pytest.fixture
def services(sockdir):
    """start(*names) runs each service in this process on its own socket and returns {name: target}."""
    from hotfloat.validator import StageConfig
    from hotfloat_services.serve import start as start_service

    running = {}

    def start(*names, concurrency=2, **config):
        for name in names:
            running[name] = start_service(name, str(sockdir / f"{name}.sock"), token=TOKEN, concurrency=concurrency,
                                          config=StageConfig(**{**QUICK, **config}))
        return {n: r.target for n, r in running.items()}

    yield start
    for r in running.values():
        r.stop(0)


@pytest.fixture
def packed(make_bundle):
    """pack_dir(path) -> (archive bytes, identity) for a bundle directory; default: a fresh torch bundle."""

    def pack_dir(path=None):
        bundle = load_bundle(path or make_bundle())
        return pack(bundle), bundle.identity

    return pack_dir
