"""The candidate child: loads one op and serves calls over the wire channel, inside the sandbox.

Everything here runs in the untrusted process, so it decides nothing: it rebuilds the tensors it is sent,
calls the kernel, snapshots the outputs right after return, waits, fingerprints again, and sends bytes back.
Every call looks the same to the kernel; the trusted parent compares. Loaded by file path (the hotfloat
package is not importable in the sandbox), so it imports only the standard library, torch and `wire`.
"""

import importlib.util
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import wire  # noqa: E402

KINDS = {"load", "call", "capture", "replay", "exit"}
MAX_REQUEST = 4 << 30


class Child:
    """Serves one op: the kernel, its reusable buffers (so pointers repeat across calls), and a captured graph."""

    def __init__(self, rfd: int, wfd: int, device: str):
        self.rfd, self.wfd, self.device = rfd, wfd, device
        self.fn = None
        self.arena: dict[tuple[str, str], torch.Tensor] = {}
        self.graph = None
        self.graph_args = None

    def send(self, kind, meta, tensors=()):
        wire.write_frame(self.wfd, wire.encode(kind, meta, list(tensors)))

    def serve(self) -> None:
        info = {"torch": torch.__version__, "device": self.device, "arch": _arch(self.device)}
        self.send("hello", info)
        while True:
            frame = wire.read_frame(self.rfd, kinds=KINDS, max_payload=MAX_REQUEST)
            if frame.kind == "exit":
                return
            try:
                getattr(self, "do_" + frame.kind)(frame)
            except BaseException as e:  # the kernel's failure is data for the parent, never a crash here
                self.send("raised", {"stage": frame.kind, "error": _describe(e)})

    def do_load(self, frame) -> None:
        source, entry = frame.meta["source"], frame.meta["entry"]
        root = frame.meta["root"]
        sys.path.insert(0, os.path.join(root, os.path.dirname(source)))
        spec = importlib.util.spec_from_file_location("candidate_" + entry, os.path.join(root, source))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        fn = getattr(module, entry, None)
        if not callable(fn):
            raise TypeError(f"entry {entry!r} is not a callable in {source}")
        self.fn = fn
        self.send("loaded", {})

    def bind(self, frame):
        """Copies fresh bytes into the arena buffer for each tensor (same storage across trials) and builds args."""
        views, flats = {}, {}
        for h, data in frame.tensors:
            flat_in, _ = wire.to_tensor(h, data)
            key = (frame.meta["arena"], h.name)
            flat = self.arena.get(key)
            if flat is None or flat.numel() != h.storage or wire.NAMES[flat.dtype] != h.dtype:
                flat = torch.empty(h.storage, dtype=flat_in.dtype, device=self.device)
                self.arena[key] = flat
            flat.copy_(flat_in)
            flats[h.name] = flat
            views[h.name] = flat.as_strided(h.shape, h.stride)
        args = [views[a["name"]] if a["kind"] == "tensor" else a["value"] for a in frame.meta["args"]]
        return args, views, flats

    def do_call(self, frame) -> None:
        args, views, flats = self.bind(frame)
        before = {n: (v.data_ptr(), tuple(v.shape), tuple(v.stride())) for n, v in views.items()}
        returned = self.fn(*args)
        self.reply(frame, views, flats, before, returned)

    def do_capture(self, frame) -> None:
        args, _, _ = self.bind(frame)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self.fn(*args)
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.fn(*args)
        self.graph_args = frame.meta["arena"]
        self.send("captured", {})

    def do_replay(self, frame) -> None:
        if self.graph is None or frame.meta["arena"] != self.graph_args:
            raise RuntimeError("replay without a captured graph")
        _, views, flats = self.bind(frame)
        before = {n: (v.data_ptr(), tuple(v.shape), tuple(v.stride())) for n, v in views.items()}
        self.graph.replay()
        self.reply(frame, views, flats, before, None)

    def reply(self, frame, views, flats, before, returned) -> None:
        """Snapshot right after return, then fingerprint again after the settle delay to expose deferred writes."""
        _sync(self.device)
        outputs = frame.meta["outputs"]
        snapshot = [(h, wire.flat_bytes(flats[h.name])) for h, _ in frame.tensors if h.name in outputs]
        moved = [n for n, v in views.items() if (v.data_ptr(), tuple(v.shape), tuple(v.stride())) != before[n]]
        time.sleep(frame.meta["settle_s"])
        _sync(self.device)
        meta = {
            "returned": None if returned is None else type(returned).__name__,
            "moved": moved,
            "outputs_digest": wire.digest([flats[n] for n in outputs]),
            "inputs_digest": wire.digest([flats[n] for n in frame.meta["inputs"]]),
        }
        self.send("result", meta, snapshot)


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.current_stream().synchronize()


def _arch(device: str) -> str:
    if device != "cuda":
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def _describe(e: BaseException) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = next((f"{os.path.basename(f.filename)}:{f.lineno}" for f in reversed(tb) if "/bundle/" in f.filename
                  or "kernels" in f.filename), "")
    return f"{type(e).__name__}: {e}"[:400] + (f" (at {where})" if where else "")


if __name__ == "__main__":
    rfd, wfd = int(sys.argv[1]), int(sys.argv[2])
    Child(rfd, wfd, sys.argv[3]).serve()
