"""The host readings around a pass: a process tree's CPU seconds (grandchildren included), stolen time, SM clock."""

import subprocess
import sys
import time

from hotfloat.engine import hostload

BURN = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass\\nprint('done', flush=True)\\ntime.sleep(30)"], stdout=subprocess.PIPE)
child.stdout.readline()
print("ready", flush=True)
time.sleep(30)
"""


def test_tree_cpu_counts_what_a_grandchild_burned_and_nothing_once_gone():
    proc = subprocess.Popen([sys.executable, "-c", BURN], stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline() == b"ready\n"
        used = hostload.tree_cpu_s(proc.pid)
        assert 0.5 <= used < 5.0, used  # the grandchild's 0.6 s of work, plus two interpreters starting
        assert hostload.tree_cpu_s(proc.pid) >= used  # cumulative
    finally:
        subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)
        proc.kill()
        proc.wait()
    time.sleep(0.1)
    assert hostload.tree_cpu_s(proc.pid) == 0.0


def test_a_pass_share_is_the_difference_of_two_readings():
    before = hostload.Reading(tree_cpu_s=1.0, steal_s=2.0, sm_clock_mhz=1980.0)
    after = hostload.Reading(tree_cpu_s=1.75, steal_s=2.5, sm_clock_mhz=1755.0)
    assert after.since(before) == {"cpu_s": 0.75, "steal_s": 0.5, "sm_mhz": 1755.0}
    assert hostload.steal_s() >= 0.0 and hostload.sm_clock_mhz() >= 0.0
