"""tools/loadtest.py in CI: mixed good, broken and hostile submissions through `validator run` and the services, with
the admission worker and the validator SIGKILLed mid-run: nothing lost, nothing decided twice, every submission
final with a reason, every hostile archive refused at intake with one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parents[2] / "tools" / "loadtest.py"


def test_mixed_submissions_survive_a_killed_worker_and_a_killed_validator():
    run = subprocess.run(
        [sys.executable, str(TOOL), "--n", "15", "--workers", "2", "--faults", "--timeout", "500", "--json"],
        capture_output=True,
        text=True,
        timeout=700,
    )
    result = json.loads(run.stdout)
    assert run.returncode == 0 and not result["problems"], result["problems"] or run.stderr[-2000:]
    assert result["in_ledger"] == result["final"] == 12
    assert sum(result["refused_at_intake"].values()) == 3 and "MULTI-LINE" not in result["refused_at_intake"]
    assert len(result["faults"]) == 2 and result["validator_starts"] == 2
    assert result["outcomes"]["wrong"].get("admitted", 0) == result["outcomes"]["banned"].get("admitted", 0) == 0
    assert result["outcomes"]["good"].get("failed", 0) == 0 and result["outcomes"]["good"].get("admitted", 0) > 0
    assert result["per_minute"] > 0
