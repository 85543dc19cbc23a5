"""A stand-in for `python -m sglang.launch_server` in CI: same /health and /generate API, same seam environment.

It arms the bundle exactly as the SGLang plugin does (HOTFLOAT_SEAMS=1, HOTFLOAT_ARMED_BUNDLE), once per simulated
tensor-parallel rank, writes the same per-process seam reports, and decodes greedily from a tiny deterministic
model whose MLP activation goes through the seam router, so a broken silu kernel changes the completion.
STANDIN_BYPASS_SEAM=1 simulates an engine whose seam is not wired (the bundle never runs).
Usage: standin_server.py PORT TP
"""

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

from hotfloat.seams import arm_from_env

VOCAB = "abcdefghijklmnopqrstuvwxyz .,"


class Model:
    """Embedding -> up projection -> silu_and_mul (through the seam) -> down projection -> argmax."""

    def __init__(self, router):
        g = torch.Generator().manual_seed(1234)
        self.router = router
        self.embed = torch.randn(len(VOCAB), 64, generator=g)
        self.up = torch.randn(64, 256, generator=g) / 8
        self.down = torch.randn(128, len(VOCAB), generator=g) / 8

    def stock(self, x):
        d = x.shape[-1] // 2
        return torch.nn.functional.silu(x[..., :d]) * x[..., d:]

    def complete(self, prompt: str, n: int) -> str:
        ids = [VOCAB.index(c) if c in VOCAB else 0 for c in prompt.lower()]
        out = []
        for _ in range(n):
            h = self.embed[ids].mean(0, keepdim=True) @ self.up
            a = self.stock(h) if os.environ.get("STANDIN_BYPASS_SEAM") else self.router.silu_and_mul(h, stock=self.stock)
            nxt = (int((a @ self.down).argmax()) + int(a.abs().sum() * 1e3)) % len(VOCAB)  # sensitive to every value
            ids.append(nxt)
            out.append(VOCAB[nxt])
        return "".join(out)


def main() -> None:
    port, tp = int(sys.argv[1]), int(sys.argv[2])
    if not Path(os.environ["HOTFLOAT_SERVE_MODEL"]).exists():
        sys.exit("model path does not exist")
    routers = [arm_from_env() for _ in range(tp)] if os.environ.get("HOTFLOAT_SEAMS") == "1" else []
    reports = os.environ.get("HOTFLOAT_SEAMS_REPORT_DIR")
    for rank, r in enumerate(routers):
        if reports:
            Path(reports, f"seams-{os.getpid()}-r{rank}.json").write_text(json.dumps({"identity": r.identity}))
    model = Model(routers[0] if routers else arm_from_env({}))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send(200, {}) if self.path == "/health" else self._send(404, {})

        def do_POST(self):
            req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            params = req.get("sampling_params", {})
            if self.path != "/generate" or params.get("temperature") != 0:
                return self._send(400, {"error": "only greedy /generate is served"})
            self._send(200, {"text": model.complete(req["text"], int(params["max_new_tokens"]))})

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
