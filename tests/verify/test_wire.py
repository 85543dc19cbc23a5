"""The wire codec: tensors survive a round trip bit-exactly, and every malformed or oversized frame is refused."""

from __future__ import annotations

import json
import os
import time

import pytest
import torch

from hotfloat.verify import wire


def _pipe_with(data: bytes, close: bool = True) -> int:
    r, w = os.pipe()
    os.write(w, data)
    if close:
        os.close(w)
    return r


def _raw(head: dict | bytes, payload: bytes = b"", magic: bytes = wire.MAGIC) -> bytes:
    body = head if isinstance(head, bytes) else json.dumps(head).encode()
    return magic + len(body).to_bytes(4, "big") + body + payload


def test_round_trip_keeps_bits_strides_and_padding():
    flat = torch.randn(3 * 7, dtype=torch.float32).to(torch.bfloat16)
    header = wire.TensorHeader("out", "bf16", (3, 5), (7, 1), 21)
    r, w = os.pipe()
    wire.write_frame(w, wire.encode("result", {"k": [1, "a"]}, [(header, wire.flat_bytes(flat))]))
    frame = wire.read_frame(r, kinds={"result"}, max_payload=1 << 20, deadline=time.monotonic() + 5)
    got_flat, view = wire.to_tensor(*frame.tensor("out"))
    assert frame.meta == {"k": [1, "a"]}
    assert torch.equal(got_flat.view(torch.int16), flat.view(torch.int16))
    assert view.shape == (3, 5) and view.stride() == (7, 1)
    assert wire.digest([got_flat]) == wire.digest([flat])


@pytest.mark.parametrize(
    "data, message",
    [
        (_raw({"kind": "result", "meta": {}, "tensors": []}, magic=b"EVIL"), "bad frame magic"),
        (b"HFW1" + (wire.MAX_HEADER_BYTES + 1).to_bytes(4, "big"), "exceeds"),
        (_raw(b"{not json"), "not JSON"),
        (_raw(b'{"kind": "result", "meta": {"x": NaN}, "tensors": []}'), "not allowed"),
        (_raw({"kind": "verdict", "meta": {}, "tensors": []}), "unexpected frame kind"),
        (_raw({"kind": "result", "meta": {}, "tensors": [], "status": "PASS"}), "exactly kind, meta, tensors"),
        (_raw({"kind": "result", "meta": [], "tensors": []}), "meta must be an object"),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [{"name": "o", "dtype": "fp64", "shape": [1], "stride": [1], "storage": 1}],
                }
            ),
            "unknown dtype",
        ),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [{"name": "o", "dtype": "fp32", "shape": [4, 4], "stride": [4, 1], "storage": 8}],
                }
            ),
            "reaches past",
        ),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [{"name": "o", "dtype": "fp32", "shape": [-1], "stride": [1], "storage": 1}],
                }
            ),
            "small integers",
        ),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [
                        {"name": "o", "dtype": "fp32", "shape": [1], "stride": [1], "storage": 1, "pickle": "x"}
                    ],
                }
            ),
            "exactly the keys",
        ),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [{"name": "o", "dtype": "fp32", "shape": [1 << 20], "stride": [1], "storage": 1 << 20}],
                }
            ),
            "payload exceeds",
        ),
        (
            _raw(
                {
                    "kind": "result",
                    "meta": {},
                    "tensors": [{"name": "o", "dtype": "fp32", "shape": [2], "stride": [1], "storage": 2}],
                },
                b"\0" * 3,
            ),
            "closed the channel",
        ),
    ],
)
def test_hostile_frames_are_refused(data, message):
    with pytest.raises(wire.ProtocolError, match=message):
        wire.read_frame(_pipe_with(data), kinds={"result"}, max_payload=1 << 16, deadline=time.monotonic() + 5)


def test_a_silent_peer_hits_the_deadline():
    r = _pipe_with(b"HFW1", close=False)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        wire.read_frame(r, kinds={"result"}, max_payload=0, deadline=time.monotonic() + 0.3)
    assert time.monotonic() - started < 2


def test_encode_refuses_a_payload_that_does_not_match_its_header():
    header = wire.TensorHeader("x", "fp16", (2,), (1,), 2)
    with pytest.raises(wire.ProtocolError, match="header says 4"):
        wire.encode("call", {}, [(header, b"\0" * 6)])
