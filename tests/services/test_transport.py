"""Addresses: Unix sockets by default, TCP only on loopback."""

from __future__ import annotations

import pytest

from hotfloat.errors import InputError
from hotfloat_services.common.transport import address


@pytest.mark.parametrize("given, expected", [
    ("unix:/run/hf/c.sock", "unix:/run/hf/c.sock"),
    ("/run/hf/c.sock", "unix:/run/hf/c.sock"),
    ("127.0.0.1:0", "127.0.0.1:0"),
    ("localhost:7000", "localhost:7000"),
    ("[::1]:7000", "[::1]:7000"),
])
def test_accepted_addresses(given, expected):
    assert address(given) == expected


@pytest.mark.parametrize("given", ["0.0.0.0:7000", "10.1.2.3:80", "example.com:443", "nonsense", "127.0.0.1:x"])
def test_refused_addresses(given):
    with pytest.raises(InputError):
        address(given)
