"""chain/feed_server.py on loopback with a real certificate: it serves the latest bytes at /feed.json and nothing
else, and a client that never finishes its TLS handshake holds one connection, not the server."""

from __future__ import annotations

import socket
import time

import pytest
import trustme

from hotfloat.chain.feed_server import FeedServer
from hotfloat.chain.fetch import FetchPolicy, FetchRefused, fetch_body


@pytest.fixture
def server(tmp_path):
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "cert.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    s = FeedServer("127.0.0.1", 0, str(tmp_path / "cert.pem"), str(tmp_path / "cert.pem"))
    yield s, FetchPolicy(allow_private=True, cafile=str(tmp_path / "ca.pem"), deadline_s=10)
    s.close()


def test_it_serves_the_latest_feed_and_nothing_else(server):
    s, policy = server
    with pytest.raises(FetchRefused, match="HTTP 404"):
        fetch_body(s.url, policy)  # nothing signed yet
    s.update(b'{"feed":"one"}')
    assert fetch_body(s.url, policy) == b'{"feed":"one"}'
    s.update(b'{"feed":"two"}')
    assert fetch_body(s.url, policy) == b'{"feed":"two"}'
    with pytest.raises(FetchRefused, match="HTTP 404"):
        fetch_body(s.url.replace("/feed.json", "/../../etc/passwd"), policy)


def test_a_stalled_handshake_does_not_hold_other_clients(server):
    s, policy = server
    s.update(b"{}")
    host, port = s.url.split("//")[1].split("/")[0].split(":")
    stalled = [socket.create_connection((host, int(port))) for _ in range(5)]  # connect, never speak TLS
    try:
        started = time.monotonic()
        assert fetch_body(s.url, policy) == b"{}"
        assert time.monotonic() - started < 5
    finally:
        for c in stalled:
            c.close()
