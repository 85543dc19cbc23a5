"""The bench child: the only process where a bench imports the miner's kernels, started by `run_bench` through
`hotfloat.sandbox.run_child`. A fresh interpreter, so the CPU run's TRITON_INTERPRET=1 is set before triton loads.

It speaks `hotfloat.sandbox.channel`: the request (Options, the bundle's path as the child sees it, and where to
copy the validator's warm JIT caches from) on stdin; `ready` once torch, triton and the harness are imported and the
caches are copied, before any of the bundle's code is imported; then a ChildResult. Progress goes to stderr as
`hotfloat-progress DONE TOTAL LABEL` lines."""

from __future__ import annotations

import os
import shutil
import sys

from ..errors import HotfloatError
from ..sandbox import channel
from .harness import PROGRESS, Options, bench_in_process


def main() -> None:
    """Answers one request: copies the warm caches, says ready, runs the bench, replies with the report or the error."""
    raw = channel.request()
    path = raw.pop("path")
    warm = raw.pop("warm_cache")
    if warm and os.path.isdir(warm["from"]):  # the validator's JIT builds, copied so nothing writes to them
        shutil.copytree(warm["from"], warm["to"], dirs_exist_ok=True, symlinks=True)
    options = Options(
        **{**raw, "dtypes": tuple(raw["dtypes"]), "shapes": tuple(raw["shapes"]), "stock": tuple(raw["stock"])}
    )
    channel.ready()

    def progress(done: int, total: int, label: str) -> None:
        print(f"{PROGRESS} {done} {total} {label}", file=sys.stderr, flush=True)

    try:
        result = {"report": bench_in_process(path, options, progress).model_dump(mode="json")}
    except HotfloatError as e:
        result = {"error": {"kind": type(e).__name__, "message": str(e)}}
    channel.reply(result)


if __name__ == "__main__":
    main()
