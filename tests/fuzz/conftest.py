"""Fuzz harness: every target runs in one child process under a 1 GiB address-space limit and a per-input deadline.

`target(name, data)` sends one input and returns the child's answer; it fails the test when the target let anything
but its own bad-input error escape, answered with more than one line, died (memory), or missed the deadline (time).
Hypothesis runs derandomized with bounded examples, so the suite is deterministic and its cost is fixed.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

CHILD = Path(__file__).with_name("child.py")
DEADLINE_S = 30.0
"""Per input; generous for a loaded 2-core CI box, while a quadratic parser or a hang still shows up as a failure."""

settings.register_profile(
    "fuzz",
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
settings.load_profile("fuzz")


class Child:
    """One long-lived child process running targets; restarted after a failure so later inputs still run."""

    def __init__(self):
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONHASHSEED": "0"},
        )
        assert self._answer(120.0)["kind"] == "ready"

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def run(self, name: str, data: bytes) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        raw = name.encode()
        self.proc.stdin.write(len(raw).to_bytes(4, "big") + raw + len(data).to_bytes(4, "big") + data)
        self.proc.stdin.flush()
        try:
            return self._answer(DEADLINE_S)
        except AssertionError:
            self.stop()
            raise

    def _answer(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise AssertionError(f"the target did not answer within {timeout:g} s (time bound)")
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read().decode(errors="replace")[-2000:]
            raise AssertionError(f"the target process died (memory bound or crash), exit {self.proc.wait()}: {err}")
        return json.loads(line)


@pytest.fixture(scope="session")
def child():
    c = Child()
    yield c
    c.stop()


@pytest.fixture(scope="session")
def target(child):
    """target(name, data) -> the answer; asserts the target ended ok or with one line of its own bad-input error."""

    def run(name: str, data: bytes | str) -> dict:
        answer = child.run(name, data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
        assert answer["kind"] in ("ok", "refused"), f"{name}: {answer['error']}"
        assert "\n" not in answer["error"], f"{name}: the refusal is not one line: {answer['error']!r}"
        return answer

    return run
