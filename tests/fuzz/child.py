"""The fuzz targets, run in a child process under an address-space limit (1 GiB above what its imports map).

Reads requests from stdin as (u32 name length, name, u32 data length, data) and answers each with one JSON line:
{"kind": "ok" | "refused" | "crash", "error": ..., "seconds": ..., "rss_mb": ...}. "refused" means the target raised
its own bad-input error; anything else it raised is a "crash". A target that exhausts memory or time never answers:
the parent sees the child die or its deadline pass.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import sys
import tempfile
import threading
import time

from google.protobuf.message import DecodeError

from hotfloat.bundle import bundle_from_files, unpack
from hotfloat.bundle.manifest import parse_manifest
from hotfloat.chain.feed import verify as verify_feed
from hotfloat.chain.payload import parse_reveal
from hotfloat.copies.fingerprint import fingerprint_files
from hotfloat.errors import InputError
from hotfloat.qualify import load_evidence, recompute
from hotfloat.engine import wire as qwire
from hotfloat.verify import wire as vwire
from hotfloat_services._proto import admission_pb2
from hotfloat_services.admission.convert import build_from_proto
from hotfloat_services.common.convert import bundle_from_proto

LIMIT_BYTES = 1 << 30
MANIFEST = (
    b'bundle_id = "fuzz"\nabi_version = "hotfloat-op-abi-v1"\n\n[[ops]]\nslot = "activation.silu_and_mul"\n'
    b'source = "kernels/k.py"\nentry = "run"\nmetadata = "metadata/m.json"\n'
)
KERNEL = b"def run(x, out):\n    out.copy_(x[:, : x.shape[1] // 2])\n"
HELPER = b"import torch\n\n\ndef h(a, *b, k=1, **kw):\n    t = a(*b, **kw)\n    return torch.exp(t) * k\n"
VALIDATOR = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY"


def _feed(write, data: bytes, close) -> threading.Thread:
    """Writes the hostile bytes from a thread (a pipe holds 64 KiB), then closes, as a child that exits would."""

    def run():
        try:
            write(data)
        except OSError:
            pass
        finally:
            close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def verify_frame(data: bytes) -> None:
    r, w = os.pipe()
    _feed(lambda d: _write_all(w, d), data, lambda: os.close(w))
    try:
        vwire.read_frame(r, kinds={"result", "raised"}, max_payload=1 << 20, deadline=time.monotonic() + 5)
    finally:
        os.close(r)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def qualify_message(data: bytes) -> None:
    a, b = socket.socketpair()
    _feed(a.sendall, data, a.close)
    try:
        qwire.recv(b, deadline=time.monotonic() + 5)
    finally:
        b.close()


def evidence(data: bytes) -> None:
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        f.write(data)
        f.flush()
        recompute(load_evidence(f.name))


def admit_request(data: bytes) -> None:
    """What the admission servicer does with a request before any work (gRPC refuses undecodable protobuf first)."""
    msg = admission_pb2.AdmitRequest.FromString(data)
    bundle_from_proto(msg.bundle)
    build_from_proto(msg.build)


TARGETS = {
    "manifest": (lambda d: parse_manifest(d.decode("utf-8", "replace")), (InputError,)),
    "metadata": (
        lambda d: bundle_from_files({"manifest.toml": MANIFEST, "kernels/k.py": KERNEL, "metadata/m.json": d}),
        (InputError,),
    ),
    "archive": (unpack, (InputError,)),
    "payload": (parse_reveal, (ValueError,)),
    "verify_frame": (verify_frame, (vwire.ProtocolError, TimeoutError)),
    "qualify_message": (qualify_message, (qwire.WireError,)),
    "evidence": (evidence, (InputError,)),
    "admit_request": (admit_request, (InputError, DecodeError)),
    "fingerprint": (
        lambda d: fingerprint_files({"kernels/k.py": d, "kernels/h.py": HELPER}, [("s:d", "kernels/k.py", "run")]),
        (InputError,),
    ),
    "feed": (lambda d: verify_feed(d, VALIDATOR), (InputError,)),
}


def _limit() -> None:
    with open("/proc/self/status") as f:
        vm = next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (vm + LIMIT_BYTES, vm + LIMIT_BYTES))


def _read(n: int) -> bytes:
    buf = sys.stdin.buffer.read(n)
    if len(buf) != n:
        sys.exit(0)
    return buf


def main() -> None:
    _limit()
    print(json.dumps({"kind": "ready"}), flush=True)
    while True:
        name = _read(int.from_bytes(_read(4), "big")).decode()
        data = _read(int.from_bytes(_read(4), "big"))
        target, refusals = TARGETS[name]
        start = time.monotonic()
        try:
            target(data)
            kind, error = "ok", ""
        except refusals as e:
            kind, error = "refused", str(e)
        except BaseException as e:  # noqa: BLE001 - the point is to report anything the target let escape
            kind, error = "crash", f"{type(e).__name__}: {e}"[:2000]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
        print(
            json.dumps({"kind": kind, "error": error, "seconds": time.monotonic() - start, "rss_mb": rss}), flush=True
        )


if __name__ == "__main__":
    main()
