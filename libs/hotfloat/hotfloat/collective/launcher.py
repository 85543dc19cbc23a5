"""The parent's side of a collective run's ranks: one sandboxed launcher holding them all, and a pair of pipes per
rank whose ends reach only their own rank, so a rank sees its inputs only when a case is due and a dead rank shows
up as end-of-file; any fault becomes an Abort that ends the run with the reason."""

from __future__ import annotations

import os
import select
import sys
import time
from pathlib import Path

from ..sandbox import JOIN_FAILED, Bind, SandboxPolicy, child_env, spawn
from ..verify import wire

RANK = Path(__file__).with_name("rank.py")
CODEC = Path(wire.__file__).resolve()
WORK, TOOL, CODEC_DIR = "/coll", "/hotfloat-collective", "/hotfloat-codec"
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
"""NCCL ranks run without NVLink multicast: verification needs none, and a multicast object left behind can take a
shared host's GPUs out of service (the sandbox's fresh environment would otherwise drop the host's own setting)."""


class Abort(Exception):
    """A rank's fault that ends the run: the reason, and whether it is the infrastructure's rather than the bundle's."""

    def __init__(self, reason: str, infrastructure: bool = False):
        super().__init__(reason)
        self.infrastructure = infrastructure


class Ranks:
    """The parent's ends of every rank's pipes, and the sandboxed launcher holding the ranks."""

    def __init__(self, world: int):
        self.to, self.frm, self.rank_fds = [], [], []
        for _ in range(world):
            r_in, w_in = os.pipe()
            r_out, w_out = os.pipe()
            os.set_blocking(w_in, False)
            os.set_blocking(r_out, False)
            self.to.append(w_in)
            self.frm.append(r_out)
            self.rank_fds.append([r_in, w_out])
        self.proc = None

    def send(self, r: int, kind: str, meta: dict, tensors, deadline: float) -> None:
        wire.write_frame(self.to[r], wire.encode(kind, meta, list(tensors)), deadline)

    def collect(self, kinds: set[str], max_payload: int, deadline: float) -> dict[int, wire.Frame]:
        """One frame from every rank, in whatever order they answer; a rank that raises ends the wait at once."""
        frames: dict[int, wire.Frame] = {}
        poller = select.poll()
        for fd in self.frm:
            poller.register(fd, select.POLLIN)
        while len(frames) < len(self.frm):
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(sorted(set(range(len(self.frm))) - set(frames)))
            for fd, _ in poller.poll(min(left, 1.0) * 1000):
                r = self.frm.index(fd)
                try:
                    frames[r] = wire.read_frame(
                        fd, kinds=kinds | {"raised"}, max_payload=max_payload, deadline=deadline
                    )
                except wire.ProtocolError as e:
                    raise Abort(f"rank {r}: {self.died() or f'protocol violation on its channel: {e}'}") from None
                poller.unregister(fd)
                if frames[r].kind == "raised":
                    raise Abort(f"rank {r} raised: {clean(frames[r].meta.get('error'))}")
        return frames

    def died(self) -> str:
        for _ in range(50):
            if self.proc is not None and self.proc.popen.poll() is not None:
                if self.proc.popen.returncode == JOIN_FAILED:
                    raise Abort("the sandbox could not join its cgroup", infrastructure=True)
                return f"the ranks exited (status {self.proc.popen.returncode})"
            time.sleep(0.01)
        return ""

    def drop_rank_ends(self) -> None:
        """The ranks hold their ends now; closing ours lets a dead rank show up as end-of-file."""
        for fd in (fd for pair in self.rank_fds for fd in pair):
            os.close(fd)
        self.rank_fds = []

    def close(self) -> None:
        if self.proc is not None:
            self.proc.kill()
        for fd in (*self.to, *self.frm, *(fd for pair in self.rank_fds for fd in pair)):
            try:
                os.close(fd)
            except OSError:
                pass


def launch(work: Path, root: str, device: str, timeout_s: float, sandboxed: bool, rank_fds: list[list[int]]):
    """Starts the rank launcher in one sandbox; every rank's pipe ends travel in and only reach their own rank."""
    policy = SandboxPolicy(
        gpu=device == "cuda",
        address_space_bytes=None if device == "cuda" else 16 << 30,
        cpu_seconds=max(60, int(timeout_s) * 4),
    )
    tool = TOOL if sandboxed else str(RANK.parent)
    binds = [Bind(work, WORK, writable=True), Bind(RANK.parent, TOOL), Bind(CODEC, f"{CODEC_DIR}/{CODEC.name}")]
    extra = {"OMP_NUM_THREADS": "1"} | (NO_MULTICAST if device == "cuda" else {"TRITON_INTERPRET": "1"})
    env = child_env(extra, home=root)
    argv = [sys.executable, "-I", f"{tool}/{RANK.name}", root, "launch"]
    fds = tuple(fd for pair in rank_fds for fd in pair)
    with open(work / "log.txt", "wb") as log:
        return spawn(argv, policy, sandboxed=sandboxed, binds=binds, env=env, cwd=str(work), stdout=log, pass_fds=fds)


def clean(text: object) -> str:
    """Rank-supplied text is shown, never trusted: printable, one line, bounded."""
    return "".join(ch if ch.isprintable() else " " for ch in str(text))[:300]
