"""The engine wire: bounded JSON objects only, and a deadline on every wait."""

import socket
import struct
import time

import pytest

from hotfloat.engine import wire


@pytest.fixture
def pair():
    a, b = socket.socketpair()
    yield a, b
    a.close()
    b.close()


def test_round_trip(pair):
    wire.send(pair[0], {"type": "done", "i": 1})
    assert wire.recv(pair[1], time.monotonic() + 5) == {"type": "done", "i": 1}


@pytest.mark.parametrize(
    "raw", [struct.pack(">I", wire.MAX_MESSAGE + 1), struct.pack(">I", 2) + b"[]", struct.pack(">I", 3) + b"\xff\xfe{"]
)
def test_oversize_non_object_and_garbage_are_refused(pair, raw):
    pair[0].sendall(raw)
    with pytest.raises(wire.WireError):
        wire.recv(pair[1], time.monotonic() + 5)


def test_silence_hits_the_deadline(pair):
    t = time.monotonic()
    with pytest.raises(wire.WireError, match="deadline"):
        wire.recv(pair[1], time.monotonic() + 0.2)
    assert time.monotonic() - t < 5


def test_closed_peer_is_an_error(pair):
    pair[0].close()
    with pytest.raises(wire.WireError, match="closed"):
        wire.recv(pair[1], time.monotonic() + 5)
