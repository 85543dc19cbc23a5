"""Runs a bench in a child process and returns its report: the parent never imports the miner's kernels, and the CPU
child gets TRITON_INTERPRET=1 before anything imports triton."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .. import errors
from ..bundle import load_bundle, unpack
from .child import PROGRESS
from .harness import Options, Progress
from .records import Report


def run_bench(path: str, options: Options, progress: Progress | None = None) -> Report:
    """Spawns `python -m hotfloat.bench.child`, forwards its stderr (progress lines to the callback), reads its report.
    The bundle contract is checked here first, so bad input fails fast without a child."""
    if Path(path).is_dir():
        load_bundle(path)
    elif Path(path).is_file():
        unpack(Path(path).read_bytes())
    else:
        raise errors.InputError(f"{path}: no such bundle directory or archive")
    env = dict(os.environ)
    if options.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    request = json.dumps({**dataclasses.asdict(options), "path": str(Path(path).resolve()),
                          "shapes": [dict(s) for s in options.shapes]})
    with tempfile.TemporaryDirectory(prefix="hotfloat-bench-") as tmp:
        result_path = Path(tmp) / "result.json"
        tail: list[str] = []
        with subprocess.Popen([sys.executable, "-m", "hotfloat.bench.child", str(result_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) as proc:
            proc.stdin.write(request)
            proc.stdin.close()
            for line in proc.stderr:
                if line.startswith(PROGRESS + " ") and progress:
                    _, done, total, label = line.rstrip("\n").split(" ", 3)
                    progress(int(done), int(total), label)
                elif not line.startswith(PROGRESS):
                    tail = (tail + [line.rstrip()])[-20:]
        if not result_path.exists():
            raise errors.InfrastructureError(f"the bench child exited with code {proc.returncode} and no report: "
                                             + " | ".join(tail[-5:]))
        result = json.loads(result_path.read_text())
    if "error" in result:
        cls = vars(errors).get(result["kind"])
        if not (isinstance(cls, type) and issubclass(cls, errors.HotfloatError)):
            cls = errors.HotfloatError
        raise cls(result["error"])
    return Report.model_validate(result["report"])
