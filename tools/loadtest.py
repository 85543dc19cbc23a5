#!/usr/bin/env python3
"""Load and fault test: N mixed submissions through `hotfloat validator run` and the services, with faults injected.

Usage: .venv/bin/python tools/loadtest.py [--n 300] [--workers 4] [--faults] [--timeout 1800] [--json]

The mix, in turn: good kernels (expected ADMITTED), wrong math (FAILED at admission), a banned import (FAILED at
scan), and hostile archives (issue 20's deep manifest, 1 GiB long-name gzip, file/directory collision, huge
min_num_tokens: refused at intake with one line, never in the ledger). The compiler and an admission worker run as
separate processes on Unix sockets; the validator is its own process. With --faults the admission worker is
SIGKILLed and restarted once a quarter of the queue is final, and the validator is SIGKILLed and restarted at half.
Exit 0 only if nothing is lost, nothing is decided twice, every submission ends final with a reason, and every
outcome is the one its kind calls for, or NO_DECISION after retries exhausted by the injected faults (never FAILED).
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import secrets
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import zlib
from pathlib import Path

from hotfloat.bundle import bundle_from_files, pack
from hotfloat.errors import InputError
from hotfloat.ledger import FINAL, Ledger, State
from hotfloat.admission.scope import QUICK_ADMISSION
from hotfloat_services.common.process import ServiceProcess

MANIFEST = """\
bundle_id = "load-{i}"
abi_version = "hotfloat-op-abi-v1"

[[ops]]
slot = "activation.silu_and_mul"
source = "kernels/k.py"
entry = "run"
"""
KERNELS = {
    "good": "import torch\n\n\ndef run(x, out):\n    d = x.shape[-1] // 2\n"
    "    out.copy_((torch.nn.functional.silu(x[..., :d].float()) * x[..., d:].float()).to(out.dtype))\n",
    "wrong": "def run(x, out):\n    out.copy_(x[..., : x.shape[-1] // 2])\n",
    "banned": "import os\n\n\ndef run(x, out):\n    os.system('true')\n",
}
EXPECTED = {"good": {State.ADMITTED}, "wrong": {State.FAILED}, "banned": {State.FAILED}}
KINDS = ("good", "good", "wrong", "banned", "hostile")
DONE = {*FINAL, State.ADMITTED}
"""Where a run without a qualification service leaves a submission for good."""


def _tar_gz(files: dict[str, bytes]) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue())


def _longname_bomb() -> bytes:
    """A GNU long-name header declaring 1 GiB followed by 1 GiB of zeros, gzip-compressed to about 1 MB."""
    info = tarfile.TarInfo("././@LongLink")
    info.type, info.size = tarfile.GNUTYPE_LONGNAME, 1 << 30
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1 << 20)
    return b"".join(
        [c.compress(info.tobuf(format=tarfile.USTAR_FORMAT)), *(c.compress(block) for _ in range(1024)), c.flush()]
    )


def hostile(i: int, bomb: bytes) -> bytes:
    """One of issue 20's four attacks, in turn."""
    kernel = KERNELS["good"].encode()
    manifest = MANIFEST.format(i=i).encode()
    return [
        _tar_gz({"manifest.toml": b"x = " + b"[" * 100_000 + b"]" * 100_000, "kernels/k.py": kernel}),
        bomb,
        _tar_gz({"manifest.toml": manifest, "kernels/k.py": kernel, "kernels/k.py/evil.py": b"x = 1\n"}),
        _tar_gz(
            {
                "manifest.toml": manifest + b'metadata = "metadata/m.json"\n',
                "kernels/k.py": kernel,
                "metadata/m.json": b'{"min_num_tokens": 500000}',
            }
        ),
    ][i // len(KINDS) % 4]


def corpus(n: int) -> list[tuple[str, bytes]]:
    """(kind, archive) for N submissions with distinct identities (a distinct comment each)."""
    bomb = _longname_bomb()
    out = []
    for i in range(n):
        kind = KINDS[i % len(KINDS)]
        if kind == "hostile":
            out.append((kind, hostile(i, bomb)))
            continue
        files = {
            "manifest.toml": MANIFEST.format(i=i).encode(),
            "kernels/k.py": f"{KERNELS[kind]}# load {i}\n".encode(),
        }
        out.append((kind, pack(bundle_from_files(files))))
    return out


class Validator:
    """`hotfloat validator run` as its own process, restartable; its stderr goes to a log file."""

    def __init__(self, root: Path, ledger: Path, compiler: str, admission: str, token_file: Path, workers: int):
        self.log = root / "validator.log"
        self.argv = [
            sys.executable,
            "-m",
            "hotfloat.cli",
            "validator",
            "run",
            "--ledger",
            str(ledger),
            "--json",
            "--compiler",
            compiler,
            "--admission",
            admission,
            "--token-file",
            str(token_file),
            "--workers",
            str(workers),
            "--max-attempts",
            "10",
        ]
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    def start(self) -> None:
        with open(self.log, "a") as err:
            self.proc = subprocess.Popen(
                self.argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True
            )
        self.starts += 1

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def check(led: Ledger, kinds: dict[int, str]) -> dict:
    """The invariants: every submission final with a reason, one final transition each, no step recorded twice, and
    each kind's outcome as expected."""
    problems, outcomes = [], {}
    for sub in led.submissions():
        steps = [(t.from_state, t.to_state) for t in led.transitions(sub.id)]
        finals = [to for _, to in steps if State(to) in DONE]
        kind = kinds[sub.id]
        outcomes.setdefault(kind, {}).setdefault(sub.state.value, 0)
        outcomes[kind][sub.state.value] += 1
        if sub.state not in DONE or not sub.reason:
            problems.append(f"#{sub.id} {kind} ended {sub.state.value} without a final reason")
        if len(finals) != 1 or len(set(steps)) != len(steps):
            problems.append(f"#{sub.id} {kind}: transitions {steps}")
        faulted = sub.state is State.NO_DECISION and "no decision after" in sub.reason
        if sub.state not in EXPECTED[kind] and not faulted:
            problems.append(f"#{sub.id} {kind} ended {sub.state.value}: {sub.reason}")
    return {"problems": problems, "outcomes": outcomes}


def run(args) -> dict:
    token = secrets.token_urlsafe(24)
    with tempfile.TemporaryDirectory(prefix="hf-load-", dir="/tmp") as tmp:
        root = Path(tmp)
        token_file = root / "token"
        token_file.write_text(token)
        db = root / "ledger.db"
        kinds: dict[int, str] = {}
        refused: dict[str, int] = {}
        submitted = time.monotonic()
        with Ledger(db) as led:
            for kind, archive in corpus(args.n):
                try:
                    kinds[led.receive(archive, source=f"loadtest:{kind}")[0].id] = kind
                except InputError as e:  # what `validator submit` prints as its one error line
                    reason = str(e) if "\n" not in str(e) else "MULTI-LINE"
                    refused[reason] = refused.get(reason, 0) + 1
        intake_s = time.monotonic() - submitted
        compiler = ServiceProcess("compiler", root / "c.sock", token_file, concurrency=args.workers, log=root / "c.log")
        admission = ServiceProcess(
            "admission",
            root / "a.sock",
            token_file,
            concurrency=args.workers,
            extra=QUICK_ADMISSION.flags(),
            log=root / "a.log",
        )
        compiler.launch()
        admission.launch()
        compiler.wait_ready()
        admission.wait_ready()
        validator = Validator(root, db, compiler.target, admission.target, token_file, args.workers)
        faults: list[str] = []
        start = time.monotonic()
        try:
            validator.start()
            with Ledger(db) as led:
                while True:
                    counts = led.counts()
                    final = sum(counts[s.value] for s in DONE)
                    if args.faults and not faults and final >= len(kinds) // 4:
                        admission.kill()
                        faults.append(f"admission worker SIGKILLed at {final} final")
                        admission.launch().wait_ready()
                    if args.faults and len(faults) == 1 and final >= len(kinds) // 2:
                        validator.kill()
                        faults.append(f"validator SIGKILLed at {final} final")
                        validator.start()
                    if validator.proc.poll() is not None:
                        break
                    if time.monotonic() - start > args.timeout:
                        validator.kill()
                        faults.append("timed out")
                        break
                    time.sleep(0.2)
                seconds = time.monotonic() - start
                verdict = check(led, kinds)
                counts = {k: v for k, v in led.counts().items() if v}
                interrupted = sum(1 for sid in kinds for a in led.attempts(sid) if a.outcome == "interrupted")
        finally:
            if validator.proc and validator.proc.poll() is None:
                validator.kill()
            compiler.stop()
            admission.stop()
        if validator.proc.returncode != 0:
            verdict["problems"].append(
                f"validator exited {validator.proc.returncode}: {validator.log.read_text()[-1500:]}"
            )
    final = sum(v for k, v in counts.items() if State(k) in DONE)
    return {
        "n": args.n,
        "workers": args.workers,
        "in_ledger": len(kinds),
        "refused_at_intake": refused,
        "intake_seconds": round(intake_s, 2),
        "seconds": round(seconds, 1),
        "final": final,
        "per_minute": round(60 * final / seconds, 2),
        "counts": counts,
        "outcomes": verdict["outcomes"],
        "faults": faults,
        "validator_starts": validator.starts,
        "interrupted_attempts": interrupted,
        "problems": verdict["problems"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="submissions, a fifth of them hostile archives")
    ap.add_argument("--workers", type=int, default=2, help="submissions the validator works at once")
    ap.add_argument("--faults", action="store_true", help="kill the admission worker and the validator mid-run")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before the run counts as failed")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    result = run(args)
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(
            f"{result['final']}/{result['in_ledger']} ledger submissions final in {result['seconds']} s "
            f"({result['per_minute']}/min, {args.workers} workers); refused at intake: {result['refused_at_intake']}; "
            f"faults: {result['faults'] or 'none'}; outcomes: {result['outcomes']}; problems: {result['problems'] or 'none'}"
        )
    return 0 if not result["problems"] and result["final"] == result["in_ledger"] else 1


if __name__ == "__main__":
    sys.exit(main())
