"""tools/loadtest.py: concurrent submissions all reach a final state within a bounded time, and it says how fast."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "loadtest.py"


def test_concurrent_submissions_all_reach_a_final_state():
    run = subprocess.run([sys.executable, str(TOOL), "--n", "3", "--workers", "3", "--timeout", "240", "--json"],
                         capture_output=True, text=True, timeout=400)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout)
    assert result["final"] == 3 and result["counts"] == {"admitted": 3}
    assert result["per_minute"] > 0
