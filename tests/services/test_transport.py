"""Addresses: Unix sockets by default, TCP on loopback; other hosts and DNS targets only with mutual TLS."""

from __future__ import annotations

import pytest

from hotfloat.errors import InputError
from hotfloat_services.common.transport import Tls, address

TLS = Tls(b"ca", b"cert", b"key")


@pytest.mark.parametrize(
    "given, expected",
    [
        ("unix:/run/hf/c.sock", "unix:/run/hf/c.sock"),
        ("/run/hf/c.sock", "unix:/run/hf/c.sock"),
        ("127.0.0.1:0", "127.0.0.1:0"),
        ("localhost:7000", "localhost:7000"),
        ("[::1]:7000", "[::1]:7000"),
    ],
)
def test_accepted_addresses(given, expected):
    assert address(given) == expected


@pytest.mark.parametrize("given", ["0.0.0.0:7000", "10.1.2.3:80", "example.com:443", "nonsense", "127.0.0.1:x"])
def test_refused_addresses(given):
    with pytest.raises(InputError):
        address(given)


@pytest.mark.parametrize(
    "given",
    [
        "10.1.2.3:50051",
        "0.0.0.0:7000",
        "example.com:443",
        "compiler:50051",
        "dns:///admission.hotfloat.svc:50051",
        "[fd00::1]:50051",
    ],
)
def test_other_hosts_and_dns_targets_need_mutual_tls(given):
    assert address(given, TLS) == given
    with pytest.raises(InputError, match="needs mutual TLS"):
        address(given)


@pytest.mark.parametrize("given", ["dns:///no-port", "dns://8.8.8.8/name:53", "bad_host!:80", ":80"])
def test_malformed_targets_are_refused_even_with_tls(given):
    with pytest.raises(InputError, match="expected a socket path"):
        address(given, TLS)
