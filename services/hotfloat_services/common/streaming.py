"""Long work runs on a bounded pool while the RPC streams heartbeats, so callers see liveness and a dead worker."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, TimeoutError
from typing import TypeVar

from .._proto import common_pb2

T = TypeVar("T")
HEARTBEAT_S = 1.0


class CallerLeft(Exception):
    """Raised inside abandoned work at its next note, so a run nobody waits for stops instead of holding the host."""


class Worker:
    """A pool of `slots` threads for a server's library calls; calls beyond it wait their turn inside the pool."""

    def __init__(self, slots: int, heartbeat_s: float = HEARTBEAT_S):
        self._pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="hotfloat-work")
        self._heartbeat_s = heartbeat_s

    def run(
        self, stage: str, message: str, work: Callable[[Callable[[str], None]], T], context
    ) -> Iterator[common_pb2.Progress | T]:
        """Yields Progress now and every heartbeat while `work` runs, then its result; stops early if the caller left.

        `work` receives a `note(text)` function; the latest note is what the next heartbeat reports. Once the caller
        has left, `note` raises CallerLeft, so work that notes between its steps unwinds (and frees what it holds).
        """
        start = time.monotonic()
        latest = [f"{message} (running)"]
        left = threading.Event()

        def note(text: str) -> None:
            if left.is_set():
                raise CallerLeft(f"{stage}: the caller left")
            latest[0] = text

        future = self._pool.submit(work, note)
        yield common_pb2.Progress(stage=stage, message=message, elapsed_s=0.0)
        while True:
            try:
                yield future.result(timeout=self._heartbeat_s)
                return
            except TimeoutError:
                if not context.is_active():
                    left.set()
                    future.cancel()
                    return
                yield common_pb2.Progress(stage=stage, message=latest[0], elapsed_s=time.monotonic() - start)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
