"""The bench child: a fresh interpreter where the Triton interpreter can be chosen before triton loads, and where the
miner's kernels run away from the caller's process. Reads Options as JSON on stdin; writes the report (or the error)
as JSON to the file named by argv[1]; progress goes to stderr as `hotfloat-progress DONE TOTAL LABEL` lines."""

from __future__ import annotations

import json
import sys

PROGRESS = "hotfloat-progress"


def main() -> None:
    from ..errors import HotfloatError
    from .harness import Options, bench_in_process

    result_path = sys.argv[1]
    raw = json.loads(sys.stdin.read())
    path = raw.pop("path")
    options = Options(**{**raw, "dtypes": tuple(raw["dtypes"]), "shapes": tuple(raw["shapes"])})

    def progress(done: int, total: int, label: str) -> None:
        print(f"{PROGRESS} {done} {total} {label}", file=sys.stderr, flush=True)

    try:
        result = {"report": bench_in_process(path, options, progress).model_dump(mode="json")}
    except HotfloatError as e:
        result = {"error": str(e), "kind": type(e).__name__}
    with open(result_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
