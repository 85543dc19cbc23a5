"""The fork server: a trusted process that imports torch and transformers once, then forks one fresh engine
process per request, so a run costs seconds instead of a cold import while each engine still starts clean.

Protocol on stdin/stdout, one JSON line each way: {"socket": PATH} -> {"pid": N}. The forked engine connects to
PATH and runs hotfloat.qualify.worker.main. The server itself never arms a bundle, so candidate code never touches
it; it exits when its stdin closes (the validator ended). With `--cold` it preloads nothing, so every engine
imports everything itself after the fork (slower, and immune to any library initialising CUDA at import time).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys


def _prime() -> None:
    """Serves one tiny CPU batch so transformers' and torch's lazy imports happen here once, not in the first
    engine of every qualification (which would make the first baseline run slower than the rest)."""
    from ..seams import arm
    from .engine import build_engine, serve_batch

    serve_batch(build_engine("tiny", "fp32", "cpu", 0, arm(None)), [[1, 2, 3], [4, 5]], [2, 3], lambda *a: None)


def serve(preload: bool) -> None:
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # nothing printed by priming or by an engine can corrupt the request channel
    if preload:
        _prime()
        import torch

        if torch.cuda.is_initialized():
            raise SystemExit("fork server: CUDA was initialised before forking engines; use a cold start")
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # engines are reaped automatically; the validator kills them by group
    for line in sys.stdin:
        path = json.loads(line)["socket"]
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                out.close()  # the engine must not be able to forge replies on the request channel
                os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                sock.connect(path)
                from . import worker

                worker.main(sock)
            except BaseException:
                code = 1
            finally:
                os._exit(code)
        out.write(json.dumps({"pid": pid}) + "\n")
        out.flush()


if __name__ == "__main__":
    serve(preload="--cold" not in sys.argv[1:])
