"""The candidate child: loads one op and serves calls over the wire channel, inside the sandbox.

Everything here runs in the untrusted process, so it decides nothing: it rebuilds the tensors it is sent, runs a
burst of calls back to back, snapshots each call's outputs right after it returns, waits, fingerprints again, and
sends bytes back. Before candidate code runs it takes its own names out of reach: the codec leaves sys.modules and
sys.path, `__main__` and `sys.argv` become bland, and the bundle is imported exactly as the engine's seam loader
imports it (same package name, a private copy under the temp dir). Loaded by file path (the hotfloat package is not
importable in the sandbox), so it imports only the standard library, torch and `wire`.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
import wire  # noqa: E402

KINDS = {"load", "call", "capture", "replay"}
MAX_REQUEST = 4 << 30


def _hide() -> None:
    """Removes the harness's telling names from what a kernel can list (sys.modules, sys.path, __main__, argv)."""
    sys.path[:] = [p for p in sys.path if p != HERE]
    del sys.modules["wire"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    sys.argv[:] = ["-c"]


class Child:
    """Serves one op: the kernel, its reusable buffers (so pointers repeat across calls), and a captured graph."""

    def __init__(self, rfd: int, wfd: int, device: str):
        self.rfd, self.wfd, self.device = rfd, wfd, device
        self.fn = None
        self.root = ""
        self.arena: dict[tuple[str, str], torch.Tensor] = {}
        self.graph = None
        self.graph_args = None

    def send(self, kind, meta, tensors=()):
        wire.write_frame(self.wfd, wire.encode(kind, meta, list(tensors)))

    def serve(self) -> None:
        """Answers requests until the parent kills this process (it never asks it to exit)."""
        info = {"torch": torch.__version__, "device": self.device, "arch": _arch(self.device)}
        self.send("hello", info)
        while True:
            frame = wire.read_frame(self.rfd, kinds=KINDS, max_payload=MAX_REQUEST)
            try:
                getattr(self, "do_" + frame.kind)(frame)
            except BaseException as e:  # the kernel's failure is data for the parent, never a crash here
                self.send("raised", {"stage": frame.kind, "error": _describe(e, self.root)})

    def do_load(self, frame) -> None:
        """Imports the entry the way hotfloat.seams.loader does in the engine: a copy of the bundle in a private
        temp dir, one package per bundle identity, the source imported as a submodule of it."""
        meta = frame.meta
        self.root = tempfile.mkdtemp(prefix=f"hotfloat-armed-{meta['identity'][:12]}-", dir=os.environ.get("HOME"))
        for dirpath, _, names in os.walk(meta["root"]):
            here = os.path.join(self.root, os.path.relpath(dirpath, meta["root"]))
            os.makedirs(here, exist_ok=True)
            for name in names:
                with open(os.path.join(dirpath, name), "rb") as src, open(os.path.join(here, name), "wb") as dst:
                    dst.write(src.read())
                os.chmod(os.path.join(here, name), 0o444)  # read-only like the bundle: no rewriting itself in place
        package = f"_hotfloat_bundle_{meta['identity'][:16]}"
        module = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(package, None, is_package=True))
        module.__path__ = [self.root]
        sys.modules[package] = module
        importlib.invalidate_caches()
        source = importlib.import_module(f"{package}.{meta['source'].removesuffix('.py').replace('/', '.')}")
        fn = getattr(source, meta["entry"], None)
        if not callable(fn):
            own = [
                n for n, v in vars(source).items() if callable(v) and getattr(v, "__module__", "") == source.__name__
            ]
            raise TypeError(
                f"entry {meta['entry']!r} is not a callable in {meta['source']} (its functions: "
                f"{', '.join(own) or 'none'}; set `entry` in manifest.toml)"
            )
        self.fn = fn
        self.send("loaded", {})

    def bind(self, arena: str, arg_meta: list, prefix: str, tensors):
        """Copies fresh bytes into the arena buffer for each tensor (same storage across trials) and builds args."""
        views, flats, headers = {}, {}, {}
        for h, data in tensors:
            if not h.name.startswith(prefix):
                continue
            name = h.name[len(prefix) :]
            flat_in, _ = wire.to_tensor(h, data)
            flat = self.arena.get((arena, name))
            if flat is None or flat.numel() != h.storage or flat.dtype != flat_in.dtype:
                flat = torch.empty(h.storage, dtype=flat_in.dtype, device=self.device)
                self.arena[(arena, name)] = flat
            flat.copy_(flat_in)
            flats[name], headers[name] = flat, h
            views[name] = flat.as_strided(h.shape, h.stride)
        args = [views[a["name"]] if a["kind"] == "tensor" else a["value"] for a in arg_meta]
        return args, views, flats, headers

    def do_call(self, frame) -> None:
        """Runs a burst: every call's inputs bound first, then the calls back to back with the drawn gaps."""
        calls, gaps = frame.meta["calls"], frame.meta["gaps"]
        bound = [self.bind(c["arena"], c["args"], c["prefix"], frame.tensors) for c in calls]
        done = []
        for j, (call, (args, views, flats, headers)) in enumerate(zip(calls, bound, strict=False)):
            if j and gaps[j - 1] > 0:
                time.sleep(gaps[j - 1])
            before = _identity(views)
            try:
                returned = self.fn(*args)
            except BaseException as e:  # one call's failure is that call's verdict
                done.append({"raised": _describe(e, self.root)})
                continue
            snaps = {n: flats[n].clone() for n in call["outputs"]}  # stream-ordered right after the call
            moved = [n for n, ident in _identity(views).items() if ident != before[n]]
            done.append((call, flats, headers, snaps, moved, returned))
        self.reply(frame.meta["settle_s"], done)

    def do_capture(self, frame) -> None:
        args, _, _, _ = self.bind(frame.meta["arena"], frame.meta["args"], "", frame.tensors)
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
        _, views, flats, headers = self.bind(frame.meta["arena"], frame.meta["args"], "", frame.tensors)
        before = _identity(views)
        self.graph.replay()
        snaps = {n: flats[n].clone() for n in frame.meta["outputs"]}
        moved = [n for n, ident in _identity(views).items() if ident != before[n]]
        self.reply(frame.meta["settle_s"], [(frame.meta, flats, headers, snaps, moved, None)], burst=False)

    def reply(self, settle_s: float, done: list, burst: bool = True) -> None:
        """After the settle delay, fingerprints every call's buffers again to expose deferred writes."""
        _sync(self.device)
        time.sleep(settle_s)
        _sync(self.device)
        results, tensors = [], []
        for item in done:
            if isinstance(item, dict):
                results.append(item)
                continue
            call, flats, headers, snaps, moved, returned = item
            results.append(
                {
                    "returned": None if returned is None else type(returned).__name__,
                    "moved": moved,
                    "outputs_digest": wire.digest([flats[n] for n in call["outputs"]]),
                    "input_digests": {n: wire.digest([flats[n]]) for n in call["inputs"]},
                }
            )
            tensors += [(headers[n], wire.flat_bytes(snaps[n])) for n in call["outputs"]]
        if burst:
            self.send("result", {"calls": results}, tensors)
        else:
            self.send("result", results[0], tensors)


def _identity(views: dict) -> dict:
    return {n: (v.data_ptr(), tuple(v.shape), tuple(v.stride())) for n, v in views.items()}


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def _arch(device: str) -> str:
    if device != "cuda":
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def _describe(e: BaseException, root: str) -> str:
    tb = traceback.extract_tb(e.__traceback__)
    where = next(
        (
            f"{os.path.relpath(f.filename, root)}:{f.lineno}"
            for f in reversed(tb)
            if root and f.filename.startswith(root)
        ),
        "",
    )
    return f"{type(e).__name__}: {e}"[:400] + (f" (at {where})" if where else "")


if __name__ == "__main__":
    rfd, wfd, dev = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    _hide()
    Child(rfd, wfd, dev).serve()
