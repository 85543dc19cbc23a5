"""The work pool behind every streaming RPC: heartbeats while work runs, and work the caller abandoned stops."""

from __future__ import annotations

import threading
import time

from hotfloat_services._proto import common_pb2
from hotfloat_services.common.streaming import CallerLeft, Worker


class _Call:
    """The one thing Worker asks of a gRPC context: whether the caller is still there."""

    def __init__(self):
        self.active = True

    def is_active(self) -> bool:
        return self.active


def test_heartbeats_carry_the_latest_note_and_the_result_comes_last():
    worker = Worker(1, heartbeat_s=0.05)

    def work(note):
        note("half way")
        time.sleep(0.3)
        return 42

    items = list(worker.run("stage", "working", work, _Call()))
    worker.shutdown()
    assert items[-1] == 42
    beats = items[:-1]
    assert all(isinstance(b, common_pb2.Progress) for b in beats) and beats[0].message == "working"
    assert any(b.message == "half way" for b in beats[1:])


def test_work_the_caller_abandoned_stops_at_its_next_note():
    worker, call = Worker(1, heartbeat_s=0.05), _Call()
    steps, ended = [], threading.Event()
    outcome: list[BaseException | None] = []

    def work(note):
        try:
            for i in range(200):
                note(f"step {i}")
                steps.append(i)
                time.sleep(0.02)
            outcome.append(None)
        except CallerLeft as e:
            outcome.append(e)
        finally:
            ended.set()

    stream = worker.run("qualify", "timing", work, call)
    next(stream)
    next(stream)
    call.active = False
    assert list(stream) == []  # the stream ends without a result
    assert ended.wait(5), "abandoned work kept running"
    worker.shutdown()
    assert isinstance(outcome[0], CallerLeft) and len(steps) < 200
