"""The commitment payloads: a digest bound to one hotkey on one subnet, then one canonical, bounded, https-only
reveal; everything else refused with a reason."""

from __future__ import annotations

import os

import pytest

from hotfloat.bundle import bundle_identity
from hotfloat.chain.miner import package, reveal_bytes, seal
from hotfloat.chain.payload import (
    MAX_PAYLOAD_BYTES,
    PlainCommitment,
    commit_fields,
    digest,
    parse_commit,
    parse_reveal,
    to_fields,
)
from hotfloat.errors import InputError

H = "ab" * 32
HOTKEY = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"


def test_canonical_bytes_round_trip():
    sealed = seal(H, "https://cdn.example.org/b.tar.gz", 7, HOTKEY)
    raw = reveal_bytes(sealed, 42)
    expected = b'{"c":42,"h":"%s","s":"%s","u":"https://cdn.example.org/b.tar.gz","v":2}' % (
        H.encode(),
        sealed.salt.encode(),
    )
    assert raw == expected
    assert parse_reveal(raw) == sealed.reveal(42) == parse_reveal(raw.decode())


def test_the_digest_binds_hotkey_subnet_and_content_but_not_the_commit_block():
    sealed = seal(H, "https://x.org/a", 7, HOTKEY)
    reveal = sealed.reveal(5)
    assert digest(7, HOTKEY, reveal) == digest(7, HOTKEY, sealed.reveal(900)) == sealed.digest
    assert digest(8, HOTKEY, reveal) != sealed.digest
    assert digest(7, HOTKEY[:-1] + "Z", reveal) != sealed.digest
    assert digest(7, HOTKEY, reveal.model_copy(update={"u": "https://x.org/b"})) != sealed.digest
    assert seal(H, "https://x.org/a", 7, HOTKEY).digest != sealed.digest  # a fresh salt each time


def test_a_digest_commitment_reads_back_as_the_sdk_renders_it():
    assert commit_fields("0f" * 32) == [{"Sha256": "0x" + "0f" * 32}]
    assert parse_commit("sha256:0x" + "0f" * 32) == "0f" * 32
    assert parse_commit("sha256:0x" + "0F" * 32) is None and parse_commit('{"v":2}') is None


def test_payment_reference_is_carried_and_checked():
    sealed = seal(H, "https://x.org/a", 7, HOTKEY, "4512-0002")
    assert parse_reveal(reveal_bytes(sealed, 3)).p == "4512-0002"
    with pytest.raises(InputError, match="p: String should match"):
        seal(H, "https://x.org/a", 7, HOTKEY, "yesterday")


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
        seal(H, url, 7, HOTKEY)


def test_oversize_is_refused_on_both_sides():
    with pytest.raises(InputError):
        seal(H, "https://x.org/" + "a" * 600, 7, HOTKEY)
    raw = b'{"c":1,"h":"' + H.encode() + b'","u":"https://x.org/' + b"a" * MAX_PAYLOAD_BYTES + b'","v":2}'
    with pytest.raises(ValueError, match="oversize"):
        parse_reveal(raw)


S = b"cd" * 16


@pytest.mark.parametrize(
    "raw, why",
    [
        (b"\xff\xfe", "not UTF-8 JSON"),
        (b"[1,2]", "not a JSON object"),
        (b'{"c":1,"h":"' + H.encode() + b'","s":"' + S + b'","u":"https://x.org/a","v":2} ', "non-canonical"),
        (b'{"c":1,"c":1,"h":"' + H.encode() + b'","s":"' + S + b'","u":"https://x.org/a","v":2}', "non-canonical"),
        (b'{"c":1,"h":"' + H.encode() + b'","s":"' + S + b'","u":"https://x.org/a","v":true}', "v:"),
        (b'{"c":-1,"h":"' + H.encode() + b'","s":"' + S + b'","u":"https://x.org/a","v":2}', "c:"),
        (b'{"c":1,"h":"' + H.encode() + b'","s":"short","u":"https://x.org/a","v":2}', "s:"),
        (b'{"c":1,"h":"' + H.encode() + b'","u":"https://x.org/a","v":2}', "s:"),
        (b"[" * 1000, "not UTF-8 JSON"),
    ],
)
def test_validator_side_refuses_malformed_bytes(raw, why):
    with pytest.raises(ValueError, match=why):
        parse_reveal(raw)


def test_a_plain_commitment_is_refused_by_name():
    with pytest.raises(PlainCommitment, match="plain commitment"):
        parse_reveal(b'{"h":"' + H.encode() + b'","u":"https://x.org/a","v":1}')


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
