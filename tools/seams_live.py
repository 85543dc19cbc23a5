#!/usr/bin/env python3
"""Opt-in live serving tier (needs GPUs and the engine venv): boots SGLang three times and judges the seam.

    HOTFLOAT_SERVE_MODEL=/path/to/small-model [HOTFLOAT_SERVE_TP=1|2] [HOTFLOAT_SERVE_GPU=0|0,1] \
        [HOTFLOAT_SERVE_BOOT_TIMEOUT_S=320] [HOTFLOAT_SERVE_EXTRA_ARGS="--disable-cuda-graph"] \
        .venv/bin/python tools/seams_live.py

Running it is the opt-in: every missing prerequisite is an `error:` line and exit 1, never a skip. Prints the
verdict as JSON; exit 0 only on PASS.
"""

import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from hotfloat.compat import engine_python
from hotfloat.errors import HotfloatError
from hotfloat.seams.live import LiveConfig, run_live
from hotfloat.verdict import Status

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "seams" / "fixtures"


def main() -> int:
    cfg = LiveConfig.from_env(dict(os.environ), exact_bundle=str(FIXTURES / "silu_exact"),
                              broken_bundle=str(FIXTURES / "silu_broken"), engine_python=engine_python())
    try:
        result = run_live(cfg)
    except HotfloatError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(json.dumps({"status": result.status.value, "reason": result.reason, "arms": [asdict(a) for a in result.arms]},
                     indent=2))
    return 0 if result.status is Status.PASS else 1


if __name__ == "__main__":
    sys.exit(main())
