"""The validator's HTTPS server for its signed report feed: `GET /feed.json`, nothing else.

It serves bytes built and signed elsewhere (`FeedServer.update`), so a request never touches the ledger or the key.
Every client is a stranger: the TLS handshake runs in the connection's own thread under a deadline (a client that
stalls it holds one thread, not the server), at most MAX_CLIENTS connections are served at once (the rest are closed
at once), and each connection is read for at most TIMEOUT_S.
"""

from __future__ import annotations

import http.server
import ssl
import threading

MAX_CLIENTS = 32
TIMEOUT_S = 10.0
PATH = "/feed.json"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = TIMEOUT_S

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        body = self.server.body if self.path == PATH else None
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json" if body is not None else "text/plain")
        self.send_header("Content-Length", str(len(body or b"")))
        self.end_headers()
        self.wfile.write(body or b"")


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    body: bytes | None = None

    def __init__(self, address: tuple[str, int], context: ssl.SSLContext):
        super().__init__(address, _Handler)
        self.context, self.slots = context, threading.BoundedSemaphore(MAX_CLIENTS)

    def process_request(self, request, client_address) -> None:
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)  # over the limit: closed, never queued
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address) -> None:
        try:
            request.settimeout(TIMEOUT_S)
            try:
                tls = self.context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                self.shutdown_request(request)
                return
            super().process_request_thread(tls, client_address)
        finally:
            self.slots.release()


class FeedServer:
    """Serves the latest signed feed on `host:port` (0 picks a free port) with the given certificate and key."""

    def __init__(self, host: str, port: int, certfile: str, keyfile: str):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self._server = _Server((host, port), context)
        self._thread = threading.Thread(target=self._server.serve_forever, name="hotfloat-feed", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"https://{host}:{port}{PATH}"

    def update(self, body: bytes) -> None:
        self._server.body = body

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
