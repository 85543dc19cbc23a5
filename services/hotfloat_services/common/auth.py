"""The per-deployment token every caller presents; a missing or wrong token is refused before any work."""

from __future__ import annotations

import hmac
import os

from hotfloat.bundle.bounded import read_file
from hotfloat.errors import InputError

HEADER = "authorization"
MIN_TOKEN_CHARS = 16
MAX_TOKEN_FILE_BYTES = 4096


def load_token(token_file: str | None) -> str:
    """Reads the token from a file (preferred: not visible in `ps`) or HOTFLOAT_TOKEN; refuses weak tokens."""
    if token_file:
        try:
            token = read_file(token_file, MAX_TOKEN_FILE_BYTES).decode().strip()
        except (OSError, ValueError) as e:  # UnicodeDecodeError is a ValueError
            raise InputError(f"--token-file {token_file}: {str(e).splitlines()[0][:200]}") from None
    else:
        token = os.environ.get("HOTFLOAT_TOKEN", "").strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise InputError(
            f"a deployment token of at least {MIN_TOKEN_CHARS} characters is required (--token-file or HOTFLOAT_TOKEN)"
        )
    return token


def call_metadata(token: str) -> tuple[tuple[str, str], ...]:
    return ((HEADER, f"Bearer {token}"),)


def authorized(metadata, token: str) -> bool:
    """Constant-time check of the bearer token in the call's metadata."""
    presented = next((v for k, v in metadata or () if k == HEADER), "")
    return hmac.compare_digest(presented.encode(), f"Bearer {token}".encode())
