"""Chain fixtures: real wallets, a stand-in chain behind the real SDK, and a real HTTPS origin on loopback."""

from __future__ import annotations

import http.server
import ssl
import threading
import time

import pytest
import trustme

NETUID = 7


@pytest.fixture(autouse=True)
def _sdk_home(tmp_path, monkeypatch):
    """Keeps the SDK's config and token-symbol cache out of the real home directory."""
    monkeypatch.setenv("BTCLI_TOKEN_SYMBOLS_CACHE", str(tmp_path / "bt" / "symbols.json"))
    monkeypatch.setenv("BTCLI_CONFIG", str(tmp_path / "bt" / "config.json"))


@pytest.fixture
def wallets(tmp_path):
    """Real on-disk wallets with unencrypted hotkeys: one validator, three miners and one never registered."""
    import bittensor as bt

    root = tmp_path / "wallets"
    out = {}
    for name in ("validator", "miner1", "miner2", "miner3", "stranger"):
        w = bt.Wallet(name, "default", path=str(root))
        w.create_new_hotkey(use_password=False, suppress=True)
        out[name] = w
    out["path"] = str(root)
    return out


@pytest.fixture
def standin(tmp_path, wallets):
    """A stand-in chain: uid 0 the validator, uids 1-3 the miners; returns its `standin:PATH` network name."""
    from hotfloat.chain.standin import LocalSubstrate

    path = tmp_path / "chain.json"
    neurons = [
        (wallets[n].hotkey.ss58_address, wallets[n].hotkey.ss58_address, n == "validator")
        for n in ("validator", "miner1", "miner2", "miner3")
    ]
    LocalSubstrate.create(path, NETUID, neurons, max_fields=9)
    return f"standin:{path}"


class Origin:
    """Routes of a loopback HTTPS server: path -> (kind, *args), see `_Handler`."""

    def __init__(self, port: int, cafile: str):
        self.port, self.cafile, self.routes, self.hits = port, cafile, {}, {}

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, data: bytes) -> str:
        self.routes[path] = ("bytes", data)
        return self.url(path)


class _Handler(http.server.BaseHTTPRequestHandler):
    origin: Origin

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        o = self.server.origin
        o.hits[self.path] = o.hits.get(self.path, 0) + 1
        kind, *args = o.routes.get(self.path, ("status", 404))
        try:
            if kind == "bytes":
                self._send(200, args[0])
            elif kind == "status":
                self._send(args[0], b"")
            elif kind == "redirect":
                self.send_response(302)
                self.send_header("Location", args[0])
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif kind == "no-length":
                self.send_response(200)
                self.end_headers()
                for _ in range(args[1]):
                    self.wfile.write(args[0])
                self.close_connection = True
            elif kind == "drip-body":
                self.send_response(200)
                self.send_header("Content-Length", "100000")
                self.end_headers()
                for _ in range(1000):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(args[0])
            elif kind == "drip-headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for i in range(1000):
                    self.wfile.write(f"X-{i}: y\r\n".encode())
                    self.wfile.flush()
                    time.sleep(args[0])
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def origin(tmp_path_factory):
    """A real HTTPS server on 127.0.0.1 with a certificate from a throwaway CA (trust it through `cafile`)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    cafile = tmp_path_factory.mktemp("origin") / "ca.pem"
    ca.cert_pem.write_to_path(str(cafile))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    cert.configure_cert(ctx)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.origin = Origin(server.server_address[1], str(cafile))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.origin
    server.shutdown()
    server.server_close()


@pytest.fixture
def policy(origin):
    """A fetch policy that trusts the test CA and loopback, with a small size cap; the deadline is generous so a loaded
    CI machine never turns a slow handshake into a false refusal (deadline tests shorten it themselves)."""
    from hotfloat.chain.fetch import FetchPolicy

    return FetchPolicy(max_bytes=256 << 10, deadline_s=15, allow_private=True, cafile=origin.cafile)


@pytest.fixture
def packed(make_bundle):
    """(identity, archive bytes) of a fresh valid bundle; distinct names give distinct identities."""
    from hotfloat.chain.miner import package

    def make(name: str = "b") -> tuple[str, bytes]:
        bundle, archive = package(make_bundle(name=name))
        return bundle.identity, archive

    return make


@pytest.fixture
def reveals():
    """The reveal policy the chain tests' validator runs with: short, so tests advance few blocks."""
    from hotfloat.chain.reveal import RevealPolicy

    return RevealPolicy(after=3, within=30)


@pytest.fixture
def submit(standin, reveals):
    """submit(chain, wallet, identity, url, payment=None, wait=reveals.after) -> the Sealed record: a miner's commit of
    the digest, `wait` blocks of standing, then its reveal, through the real client and SDK."""
    from hotfloat.chain.miner import reveal_bytes, seal
    from hotfloat.chain.standin import LocalSubstrate

    def run(chain, wallet, identity, url, payment=None, wait=None, reveal=True):
        sealed = seal(identity, url, NETUID, wallet.hotkey.ss58_address, payment)
        block = chain.commit_digest(NETUID, sealed.digest, wallet)
        sealed = sealed.model_copy(update={"commit_block": block})
        LocalSubstrate(standin.removeprefix("standin:")).advance(max(0, (reveals.after if wait is None else wait) - 3))
        if reveal:
            chain.reveal(NETUID, reveal_bytes(sealed, block), wallet)
        return sealed

    return run
