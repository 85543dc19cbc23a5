#!/usr/bin/env python3
"""Load test: N distinct bundles through compile + admission over Unix sockets; prints throughput.

Usage: .venv/bin/python tools/loadtest.py [--n 8] [--workers 4] [--processes] [--full] [--timeout 600] [--json]
Services run as in-process threads by default, or as separate processes with --processes. Admission verifies one
shape in fp32 per op unless --full asks for the complete protocol. Exit 0 only if every submission reached a final
verdict (admitted, failed or no_decision) within --timeout seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

from hotfloat.bundle import bundle_from_files, pack
from hotfloat.ledger import Ledger, State
from hotfloat_services.common.process import ServiceProcess
from hotfloat_services.serve import ServiceConfig, start
from hotfloat_services.validator.clients import StageClients
from hotfloat_services.validator.pipeline import Pipeline

MANIFEST = """\
bundle_id = "load-{i}"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
"""
KERNEL = """\
import torch


def run(x, out):
    d = x.shape[-1] // 2
    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))
"""
QUICK = {"verify_max_shapes": 1, "verify_dtypes": ("fp32",)}


def archives(n: int) -> list[bytes]:
    """N bundles with distinct identities (a distinct comment each), so none is deduplicated."""
    return [pack(bundle_from_files({"manifest.toml": MANIFEST.format(i=i).encode(),
                                    "kernels/k.py": f"{KERNEL}# load {i}\n".encode()})) for i in range(n)]


@contextlib.contextmanager
def services(root: Path, token: str, processes: bool, quick: bool, concurrency: int):
    if processes:
        token_file = root / "token"
        token_file.write_text(token)
        extra = ("--verify-max-shapes", "1", "--verify-dtype", "fp32") if quick else ()
        with ServiceProcess("compiler", root / "c.sock", token_file, concurrency=concurrency) as c, \
                ServiceProcess("admission", root / "a.sock", token_file, concurrency=concurrency, extra=extra) as a:
            yield c.target, a.target
        return
    config = ServiceConfig(**(QUICK if quick else {}))
    c = start("compiler", str(root / "c.sock"), token=token, concurrency=concurrency)
    a = start("admission", str(root / "a.sock"), token=token, concurrency=concurrency, config=config)
    try:
        yield c.target, a.target
    finally:
        c.stop(0)
        a.stop(0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8, help="submissions")
    ap.add_argument("--workers", type=int, default=4, help="submissions the validator works at once")
    ap.add_argument("--processes", action="store_true", help="services as separate processes")
    ap.add_argument("--full", action="store_true", help="full verify protocol (every shape and dtype)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before the run counts as failed")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="hf-load-", dir="/tmp") as tmp:
        root = Path(tmp)
        with services(root, token, args.processes, not args.full, args.workers) as (compiler, admission), \
                Ledger(root / "ledger.db") as led:
            for archive in archives(args.n):
                led.receive(archive, source="loadtest")
            clients = StageClients(compiler, admission, None, token=token)
            stop = threading.Event()
            timer = threading.Timer(args.timeout, stop.set)
            timer.start()
            start_s = time.monotonic()
            counts = Pipeline(led, clients, workers=args.workers, on_event=lambda *e: None).run(stop=stop)
            seconds = time.monotonic() - start_s
            timer.cancel()
            clients.close()
            final = sum(counts[s.value] for s in (State.ADMITTED, State.FAILED, State.NO_DECISION))
    result = {"n": args.n, "workers": args.workers, "processes": args.processes, "full_verify": args.full,
              "seconds": round(seconds, 2), "per_minute": round(60 * final / seconds, 2), "final": final,
              "counts": {k: v for k, v in counts.items() if v}}
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(f"{final}/{args.n} submissions final in {seconds:.1f} s: {result['per_minute']} submissions/min "
              f"through compile+admit ({'processes' if args.processes else 'threads'}, {args.workers} workers) "
              f"{result['counts']}")
    return 0 if final == args.n else 1


if __name__ == "__main__":
    sys.exit(main())
