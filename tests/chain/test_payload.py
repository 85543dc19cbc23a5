"""The commitment payload: one canonical form, bounded, https only; everything else refused with a reason."""

from __future__ import annotations

import os

import pytest

from hotfloat.bundle import bundle_identity

from hotfloat.chain.miner import commitment, package
from hotfloat.chain.payload import MAX_PAYLOAD_BYTES, parse_payload, to_fields
from hotfloat.errors import InputError

H = "ab" * 32


def test_canonical_bytes_round_trip():
    payload, raw = commitment(H, "https://cdn.example.org/b.tar.gz")
    assert raw == b'{"h":"' + H.encode() + b'","u":"https://cdn.example.org/b.tar.gz","v":1}'
    assert parse_payload(raw) == payload == parse_payload(raw.decode())


def test_payment_reference_is_carried_and_checked():
    payload, raw = commitment(H, "https://x.org/a", "4512-0002")
    assert parse_payload(raw).p == "4512-0002"
    with pytest.raises(InputError, match="p: String should match"):
        commitment(H, "https://x.org/a", "yesterday")


@pytest.mark.parametrize(
    "url, why",
    [
        ("http://x.org/a", "https"),
        ("ftp://x.org/a", "https"),
        ("https://user:pw@x.org/a", "credentials"),
        ("https://x.org/a#frag", "fragment"),
        ("https://x.org/a b", "spaces"),
        ("https://x.org:99999/a", "port"),
        ("https:///nohost", "plain host"),
        ("https://exämple.org/a", "ASCII"),
    ],
)
def test_miner_side_refuses_what_validators_refuse(url, why):
    with pytest.raises(InputError, match=why):
        commitment(H, url)


def test_oversize_is_refused_on_both_sides():
    with pytest.raises(InputError):
        commitment(H, "https://x.org/" + "a" * 600)
    raw = b'{"h":"' + H.encode() + b'","u":"https://x.org/' + b"a" * MAX_PAYLOAD_BYTES + b'","v":1}'
    with pytest.raises(ValueError, match="oversize"):
        parse_payload(raw)


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'{"h":"' + H.encode() + b'","u":"https://x.org/a","v":1} ', "non-canonical"),
        (b'{"h":"' + H.encode() + b'","h":"' + H.encode() + b'","u":"https://x.org/a","v":1}', "non-canonical"),
        (b'{"h":"' + H.encode() + b'","u":"https://x.org/a","v":true}', "v:"),
        (b"[" * 1000, "not UTF-8 JSON"),
    ],
)
def test_validator_side_refuses_malformed_bytes(raw, why):
    with pytest.raises(ValueError, match=why):
        parse_payload(raw)


def test_fields_split_at_the_pallet_raw_limit():
    raw = bytes(range(256)) + b"xyz"
    fields = to_fields(raw)
    assert [next(iter(f)) for f in fields] == ["Raw128", "Raw128", "Raw3"]
    assert b"".join(bytes.fromhex(next(iter(f.values()))[2:]) for f in fields) == raw


def test_package_is_byte_reproducible(make_bundle):
    root = make_bundle()
    bundle, first = package(root)
    os.utime(root / "kernels" / "k.py", (12345, 12345))
    assert package(root)[1] == first
    assert bundle.identity == bundle_identity(bundle.files)
