"""The bounded fetch against a real HTTPS origin on loopback: every hostile origin or archive is refused with a reason."""

from __future__ import annotations

import gzip
import io
import tarfile
import time
from dataclasses import replace

import pytest

from hotfloat.chain.fetch import FetchPolicy, FetchRefused, fetch_body, fetch_bundle


def tar_gz(members: list[tarfile.TarInfo], data: dict[str, bytes] | None = None) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for m in members:
            payload = (data or {}).get(m.name)
            if payload is not None:
                m.size = len(payload)
            tar.addfile(m, io.BytesIO(payload) if payload is not None else None)
    return gzip.compress(raw.getvalue())


def member(name: str, kind: bytes = tarfile.REGTYPE, **kw) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    for k, v in kw.items():
        setattr(info, k, v)
    return info


def refusal(url: str, identity: str, policy: FetchPolicy) -> FetchRefused:
    with pytest.raises(FetchRefused) as e:
        fetch_bundle(url, identity, policy)
    return e.value


def test_good_archive_is_fetched_and_its_identity_recomputed(origin, policy, packed):
    identity, archive = packed()
    data, bundle = fetch_bundle(origin.serve("/good.tar.gz", archive), identity, policy)
    assert data == archive and bundle.identity == identity


def test_wrong_hash_is_refused(origin, policy, packed):
    identity, _ = packed("one")
    _, other = packed("two")
    e = refusal(origin.serve("/other.tar.gz", other), identity, policy)
    assert "identity mismatch" in e.reason and not e.transient


@pytest.mark.parametrize(
    "name, members, data, why",
    [
        ("escape", [member("../evil.py")], {"../evil.py": b"x"}, "refused path"),
        ("absolute", [member("/etc/evil.py")], {"/etc/evil.py": b"x"}, "refused path"),
        ("symlink", [member("kernels/k.py", tarfile.SYMTYPE, linkname="/etc/passwd")], None, "links and special files"),
        (
            "hardlink",
            [member("kernels/k.py", tarfile.LNKTYPE, linkname="manifest.toml")],
            None,
            "links and special files",
        ),
        (
            "device",
            [member("kernels/dev.py", tarfile.CHRTYPE, devmajor=1, devminor=3)],
            None,
            "links and special files",
        ),
        ("fifo", [member("kernels/p.py", tarfile.FIFOTYPE)], None, "links and special files"),
    ],
)
def test_hostile_archive_members_are_refused(origin, policy, name, members, data, why):
    e = refusal(origin.serve(f"/{name}.tar.gz", tar_gz(members, data)), "0" * 64, policy)
    assert e.reason.startswith("bad archive") and why in e.reason


def test_tar_bomb_is_refused_at_the_decompression_bound(origin, policy):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = member("kernels/bomb.py", size=64 << 20)
        tar.addfile(info, io.BytesIO(bytes(64 << 20)))
    bomb = gzip.compress(raw.getvalue())
    assert len(bomb) < policy.max_bytes
    start = time.monotonic()
    e = refusal(origin.serve("/bomb.tar.gz", bomb), "0" * 64, policy)
    assert "expands beyond" in e.reason and time.monotonic() - start < 5


def test_member_count_bomb_is_refused(origin, policy):
    members = [member(f"d{i}", tarfile.DIRTYPE) for i in range(2000)]
    e = refusal(origin.serve("/many.tar.gz", tar_gz(members)), "0" * 64, policy)
    assert "more than" in e.reason and "members" in e.reason


def test_declared_oversize_is_refused_before_reading(origin, policy):
    e = refusal(origin.serve("/big", bytes(policy.max_bytes + 1)), "0" * 64, policy)
    assert "declared size" in e.reason


def test_undeclared_oversize_is_cut_off_while_streaming(origin, policy):
    origin.routes["/stream"] = ("no-length", b"z" * 65536, 64)
    e = refusal(origin.url("/stream"), "0" * 64, policy)
    assert "exceeds the" in e.reason and "cap" in e.reason


@pytest.mark.parametrize("kind", ["drip-body", "drip-headers"])
def test_slowloris_hits_the_total_deadline(origin, policy, kind):
    origin.routes["/slow"] = (kind, 0.05)
    start = time.monotonic()
    e = refusal(origin.url("/slow"), "0" * 64, replace(policy, deadline_s=2))
    elapsed = time.monotonic() - start
    assert "deadline" in e.reason and e.transient
    assert 2 <= elapsed < 10, "the drip lasts 50 s; only the deadline ends it this early"


def test_redirect_to_https_is_followed(origin, policy, packed):
    identity, archive = packed()
    origin.serve("/real.tar.gz", archive)
    origin.routes["/moved"] = ("redirect", "/real.tar.gz")
    assert fetch_bundle(origin.url("/moved"), identity, policy)[1].identity == identity


def test_redirect_to_plain_http_is_refused(origin, policy):
    origin.routes["/down"] = ("redirect", f"http://127.0.0.1:{origin.port}/x")
    assert "must use https" in refusal(origin.url("/down"), "0" * 64, policy).reason


def test_redirect_loop_is_bounded(origin, policy):
    origin.routes["/loop"] = ("redirect", "/loop")
    assert "redirects" in refusal(origin.url("/loop"), "0" * 64, policy).reason
    assert origin.hits["/loop"] == policy.max_redirects + 1


def test_server_errors_are_transient_and_client_errors_final(origin, policy):
    origin.routes["/busy"] = ("status", 503)
    assert refusal(origin.url("/busy"), "0" * 64, policy).transient
    assert not refusal(origin.url("/missing"), "0" * 64, policy).transient


def test_untrusted_certificate_is_refused(origin, packed):
    identity, archive = packed()
    url = origin.serve("/good.tar.gz", archive)
    e = refusal(url, identity, FetchPolicy(allow_private=True, deadline_s=15))
    assert "TLS verification failed" in e.reason


def test_loopback_origins_are_refused_by_default(origin, packed):
    _, archive = packed()
    with pytest.raises(FetchRefused, match="non-public address"):
        fetch_body(origin.serve("/good.tar.gz", archive), FetchPolicy(cafile=origin.cafile))
