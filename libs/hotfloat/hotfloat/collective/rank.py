"""One rank of a collective verification run, inside the sandbox; also the launcher that starts all ranks.

`rank.py DIR launch` starts every rank of `DIR/plan.json` as its own process, each holding only its own two pipe
ends to the validator, and waits for them. `rank.py DIR R` is rank R: it joins the validator's process group (gloo on
CPU, NCCL on CUDA), imports the candidate the way the engine's seam loader does, says hello, then serves the
validator's requests one at a time over its pipes with the wire codec: a `call` brings this rank's input and its
poisoned output for one case only when that case is due (no rank can read another rank's inputs or a later case's),
`capture` and `replay` run the op inside a CUDA graph. After each call it snapshots the output, waits the drawn
settle delay and fingerprints its buffers again. It judges nothing: the parent computes the fp32 sum and compares.
Imports only the standard library, torch and the codec, never hotfloat."""

from __future__ import annotations

import datetime
import importlib
import importlib.machinery
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

KINDS = {"call", "capture", "replay", "exit"}
MAX_REQUEST = 1 << 32


def launch(work: Path) -> int:
    """Starts each rank with only its own pipe ends, then drops every pipe end from this process."""
    plan = json.loads((work / "plan.json").read_text())
    procs = []
    for r in range(plan["world"]):
        fds = tuple(plan["fds"][r])
        procs.append(subprocess.Popen([sys.executable, "-I", __file__, str(work), str(r)], pass_fds=fds))
    for pair in plan["fds"]:
        for fd in pair:
            os.close(fd)
    return max(p.wait() for p in procs)


class Rank:
    """One rank's candidate entry, group and captured graph, serving the validator's requests."""

    def __init__(self, work: Path, rank: int):
        self.work, self.rank = work, rank
        self.plan = json.loads((work / "plan.json").read_text())
        self.rfd, self.wfd = self.plan["fds"][rank]
        sys.path.insert(0, self.plan["codec"])
        import wire

        self.wire = wire
        sys.path.remove(self.plan["codec"])
        del sys.modules["wire"]
        self.graph = None
        self.graph_views = None

    def send(self, kind: str, meta: dict, tensors=()) -> None:
        self.wire.write_frame(self.wfd, self.wire.encode(kind, meta, list(tensors)))

    def run(self) -> int:
        import torch
        import torch.distributed as dist

        plan = self.plan
        self.device = torch.device("cpu")
        if plan["device"] == "cuda":
            self.device = torch.device("cuda", self.rank % torch.cuda.device_count())
            torch.cuda.set_device(self.device)
        dist.init_process_group(
            plan["backend"],
            init_method=plan["init"],
            rank=self.rank,
            world_size=plan["world"],
            timeout=datetime.timedelta(seconds=plan["pg_timeout_s"]),
        )
        self.group = dist.new_group(list(range(plan["world"])))
        hello = {
            "rank": self.rank,
            "world": plan["world"],
            "op": None,
            "identity": plan["identity"],
            "backend": plan["backend"],
            "group_size": dist.get_world_size(self.group),
        }
        try:
            self.fn = _load(self.work / "bundle", plan["identity"], plan["source"], plan["entry"])
            hello["op"] = plan["op"]
            self.send("hello", hello)
            while True:
                frame = self.wire.read_frame(self.rfd, kinds=KINDS, max_payload=MAX_REQUEST)
                if frame.kind == "exit":
                    return 0
                getattr(self, "do_" + frame.kind)(frame)
        except BaseException as e:  # the candidate's fault, reported as data; the parent aborts the whole run
            traceback.print_exc()
            try:
                self.send("raised", {"stage": "rank", "error": f"{type(e).__name__}: {e}"[:500]})
            except Exception:
                pass
            return 3
        finally:
            dist.destroy_process_group()

    def bind(self, frame):
        """This rank's buffers for one request, filled with the bytes sent, and the call's arguments."""
        views, flats, headers = {}, {}, {}
        for h, data in frame.tensors:
            flat = self.wire.to_tensor(h, data)[0].to(self.device)
            flats[h.name], headers[h.name] = flat, h
            views[h.name] = flat.as_strided(h.shape, h.stride)
        args = [
            views[a["name"]] if a["kind"] == "tensor" else self.group if a["kind"] == "group" else a["value"]
            for a in frame.meta["args"]
        ]
        return args, views, flats, headers

    def do_call(self, frame) -> None:
        args, views, flats, headers = self.bind(frame)
        before = _identity(views)
        returned = self.fn(*args)
        self.reply(frame.meta, views, flats, headers, before, returned)

    def do_capture(self, frame) -> None:
        import torch

        args, views, flats, _ = self.bind(frame)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.fn(*args)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.fn(*args)
        self.graph_views = (views, flats)
        self.send("captured", {})

    def do_replay(self, frame) -> None:
        """Copies the fresh bytes into the captured buffers, replays, and answers like a call."""
        if self.graph is None:
            raise RuntimeError("replay without a captured graph")
        views, flats = self.graph_views
        headers = {}
        for h, data in frame.tensors:
            flats[h.name].copy_(self.wire.to_tensor(h, data)[0].to(self.device))
            headers[h.name] = h
        before = _identity(views)
        self.graph.replay()
        self.reply(frame.meta, views, flats, headers, before, None)

    def reply(self, meta, views, flats, headers, before, returned) -> None:
        """Snapshot right after return, then fingerprint again after the settle delay to expose deferred writes."""
        import torch

        snaps = {n: flats[n].clone() for n in meta["outputs"]}
        moved = [n for n, ident in _identity(views).items() if ident != before[n]]
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        time.sleep(meta["settle_s"])
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        result = {
            "returned": None if returned is None else type(returned).__name__,
            "moved": moved,
            "outputs_digest": self.wire.digest([flats[n] for n in meta["outputs"]]),
            "input_digests": {n: self.wire.digest([flats[n]]) for n in meta["inputs"]},
        }
        self.send("result", result, [(headers[n], self.wire.flat_bytes(snaps[n])) for n in meta["outputs"]])


def _identity(views: dict) -> dict:
    return {n: (v.data_ptr(), tuple(v.shape), tuple(v.stride())) for n, v in views.items()}


def _load(root: Path, identity: str, source: str, entry: str):
    """The entry imported as hotfloat.seams.loader imports it in the engine: one package per bundle identity."""
    package = f"_hotfloat_bundle_{identity[:16]}"
    module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(package, None, is_package=True))
    module.__path__ = [str(root)]
    sys.modules[package] = module
    importlib.invalidate_caches()
    fn = getattr(importlib.import_module(f"{package}.{source.removesuffix('.py').replace('/', '.')}"), entry, None)
    if not callable(fn):
        raise TypeError(f"entry {entry!r} is not a callable in {source}")
    return fn


if __name__ == "__main__":
    root = Path(sys.argv[1])
    sys.exit(launch(root) if sys.argv[2] == "launch" else Rank(root, int(sys.argv[2])).run())
