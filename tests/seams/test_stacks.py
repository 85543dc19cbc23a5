"""The boot sampler (hotfloat_sglang.stacks) and its counter (tools/device/helpers/stacks.py): a process whose main thread
sits in one function is found there, and a malformed setting samples nothing."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "libs" / "hotfloat_sglang"))
from hotfloat_sglang.stacks import parse  # noqa: E402

BUSY = """
import time
from hotfloat_sglang import stacks

def spin_in_here():
    end = time.monotonic() + 0.8
    while time.monotonic() < end:
        sum(range(1000))

stacks.start()
spin_in_here()
"""


def test_the_setting_is_an_interval_and_a_duration_or_nothing():
    assert parse("0.5:120") == (0.5, 120.0)
    for bad in (None, "", "1", "0:10", "0.01:10", "1:0", "1:-5", "1:99999", "a:b", "1:2:3"):
        assert parse(bad) is None, bad


def test_a_main_thread_spinning_in_one_function_is_where_the_samples_say_it_is(tmp_path):
    env = {"HOTFLOAT_STACK_SAMPLES": "0.05:0.6", "PYTHONPATH": str(ROOT / "libs" / "hotfloat_sglang")}
    run = subprocess.run([sys.executable, "-c", BUSY], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    log = tmp_path / "engine-0B.log"
    log.write_text(run.stderr)
    samples = [x for x in run.stderr.splitlines() if x.startswith("hotfloat stack ")]
    assert 3 <= len(samples) <= 14, run.stderr  # 0.6 s at 0.05 s at most (a loaded host samples less), then none
    counted = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "device" / "helpers" / "stacks.py"), str(log), "--top", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert counted.returncode == 0, counted.stderr
    own = counted.stdout.split("self:")[1].splitlines()[1:]
    share = sum(float(x.split("%")[0]) for x in own if "<string>:spin_in_here:" in x)
    assert share >= 50, counted.stdout  # the spin's own lines hold the samples (a builtin call adds no frame)


def test_logs_without_samples_are_said_in_one_line(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("Capturing batches\n")
    got = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "device" / "helpers" / "stacks.py"), str(log)],
        capture_output=True,
        text=True,
    )
    assert got.returncode == 1 and got.stderr.count("\n") == 1 and "HOTFLOAT_STACK_SAMPLES" in got.stderr
