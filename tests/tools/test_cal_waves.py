"""tools/device/helpers/cal_waves.py, the calibrate recipe's wave planner: the waves cycle through the plan's
compositions, a wave starts only while the time left holds the longest seeded wave with a margin, its budget never
runs past the limit, and a bad plan is one line and exit 2 before any engine boots."""

import subprocess
import sys
from pathlib import Path

HELPER = Path(__file__).resolve().parents[2] / "tools/device/helpers/cal_waves.py"


def plan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HELPER), *args], capture_output=True, text=True, timeout=60)


def test_waves_cycle_through_the_plans_compositions():
    said = [plan("3 3 1+0.02:2", str(w), "5000", "400").stdout.split() for w in (1, 2, 3, 4)]
    assert said == [
        ["--stock", "3", "400"],
        ["--stock", "3", "400"],
        ["--stock", "1", "--handicap", "0.02", "2", "400"],
        ["--stock", "3", "400"],
    ]
    both = plan("2+0.02:2+0.05:2", "1", "5000", "400").stdout.split()
    assert both == ["--stock", "2", "--handicap", "0.02", "2", "--handicap", "0.05", "2", "400"]


def test_a_wave_starts_only_when_the_time_left_holds_a_seeded_wave():
    """The first wave compiled (300 s); the seeded ones took 150 and 160 s: the next needs 1.15 x 160 s plus the
    40 s reserve."""
    assert plan("3", "4", str(40 + 184 + 1), "400", "300", "150", "160").returncode == 0
    assert plan("3", "4", str(40 + 184 - 1), "400", "300", "150", "160").returncode == 1
    assert plan("3", "2", "330", "400", "250").returncode == 0, "with one wave seen, that one is the estimate"
    assert plan("3", "2", "320", "400", "250").returncode == 1


def test_a_waves_budget_is_cut_to_the_time_left_and_none_starts_without_any():
    assert plan("3", "1", "340", "400").stdout.split()[-1] == "300"
    assert plan("3", "1", "30", "400").returncode == 1


def test_a_bad_plan_is_one_line_and_exit_2():
    for bad in ("", "x", "3+2", "1+0.02:1", "2+1.5:2", "3 three"):
        p = plan(bad, "1", "5000", "400")
        assert p.returncode == 2 and p.stderr.startswith("cal_waves: ") and p.stderr.count("\n") == 1, (bad, p.stderr)
    p = plan("3")
    assert p.returncode == 2 and p.stderr.count("\n") == 1
