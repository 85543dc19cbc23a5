"""What each engine of a qualification served so far, and its fault if it had one, turned into the RunFrames that
`judge` reads; the serving order of each round, drawn from the secret seed; and the protocol's outcome."""

from __future__ import annotations

import hashlib
import random

from dataclasses import dataclass

from .isolation.memory import MemoryRecord
from .audit_records import AuditRecord
from .records import Decision, IsolationRecord, Role, RunFrame
from .isolation.resident import Served


def round_order(seed: int, round_index: int, n: int = 3) -> list[int]:
    """The order the engines serve a round's pass in, drawn from the workload seed (secret until the end)."""
    digest = hashlib.sha256(f"{seed}:order:{round_index}".encode()).digest()
    order = list(range(n))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


class Tally:
    """What one engine served so far, and its fault if it had one."""

    def __init__(self, index: int, role: Role):
        self.index, self.role = index, role
        self.pass_s: list[float] = []
        self.lat: list[list[float]] = []
        self.outs: list[list[dict]] = []
        self.error: str | None = None
        self.fault: str | None = None
        self.routed: dict[str, int] = {}
        self.stock: dict[str, int] = {}
        self.boot_s = self.wall_s = 0.0
        self.generated = 0

    def fail(self, message: str, kind: str) -> None:
        if self.error is None:
            self.error, self.fault = message[:2000] or kind, kind

    def add(self, served: Served) -> None:
        self.pass_s.append(served.seconds)
        self.lat.append(served.latency_s)
        self.outs.append(served.outputs)

    def frame(self, n: int) -> RunFrame:
        ok = self.error is None
        cut = lambda xs: xs[:n] if ok else []  # noqa: E731
        timed = sum(self.pass_s[:n])
        return RunFrame(
            index=self.index,
            role=self.role,
            ok=ok,
            raised=self.fault == "raised",
            fault=self.fault,
            error=self.error,
            pass_s=cut(self.pass_s),
            latency_s=cut(self.lat),
            tokens=[[o["tokens"] for o in p] for p in cut(self.outs)],
            logprobs=[[o["logprobs"] for o in p] for p in cut(self.outs)],
            margins=[[o["margins"] for o in p] for p in cut(self.outs)],
            routed=self.routed,
            stock=self.stock,
            wall_s=self.wall_s,
            boot_s=self.boot_s,
            tokens_per_s=self.generated / timed if ok and timed else 0.0,
        )


@dataclass(frozen=True)
class Outcome:
    """What the protocol produced: the raw frames, the decision they support, and how the run was isolated."""

    frames: list[RunFrame]
    twin: RunFrame | None
    identity: str | None
    info: dict[str, str]
    order: list[list[int]]
    decision: Decision
    isolation: IsolationRecord
    audit: list[AuditRecord] | None
    memory: MemoryRecord | None
