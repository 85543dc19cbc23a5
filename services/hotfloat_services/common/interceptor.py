"""The one place where calls are admitted and errors become gRPC statuses.

Every hotfloat RPC must carry the deployment token and a deadline; a `hotfloat.errors` exception aborts with the
status its class names; anything else is an internal fault, logged here and reported without internals.
"""

from __future__ import annotations

import logging
import sys

import grpc

from hotfloat.errors import HotfloatError

from .auth import authorized

log = logging.getLogger("hotfloat.services")
HEALTH_PREFIX = "/grpc.health.v1.Health/"
"""Health probes stay open so orchestrators can check liveness; they reveal nothing but SERVING."""
MAX_DEADLINE_S = 6 * 3600.0
"""A call without a deadline shows up as one in the far future; anything beyond this counts as none."""


class Guard(grpc.ServerInterceptor):
    """Authentication, required deadlines and error mapping for every hotfloat method."""

    def __init__(self, token: str):
        self._token = token

    def intercept_service(self, continuation, details):
        handler = continuation(details)
        if handler is None or details.method.startswith(HEALTH_PREFIX):
            return handler
        ok = authorized(details.invocation_metadata, self._token)
        codec = {
            "request_deserializer": handler.request_deserializer,
            "response_serializer": handler.response_serializer,
        }
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(self._unary(handler.unary_unary, ok, details.method), **codec)
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(self._stream(handler.unary_stream, ok, details.method), **codec)
        return None  # hotfloat has no client-streaming methods; refusing unknown shapes is safer than passing them

    @staticmethod
    def _admit(context, ok: bool) -> None:
        if not ok:
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong deployment token")
        remaining = context.time_remaining()
        if remaining is None or remaining > MAX_DEADLINE_S:
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT, f"every call must carry a deadline of at most {MAX_DEADLINE_S:.0f} s"
            )

    def _unary(self, behavior, ok, method):
        def run(request, context):
            self._admit(context, ok)
            try:
                return behavior(request, context)
            except HotfloatError as e:
                _abort(context, e)
            except Exception:
                _internal(context, method)

        return run

    def _stream(self, behavior, ok, method):
        def run(request, context):
            self._admit(context, ok)
            try:
                yield from behavior(request, context)
            except HotfloatError as e:
                _abort(context, e)
            except Exception:
                _internal(context, method)

        return run


def _abort(context, e: HotfloatError) -> None:
    context.abort(getattr(grpc.StatusCode, e.grpc_status, grpc.StatusCode.INTERNAL), str(e))


def _internal(context, method: str) -> None:
    if context.code() is not None:  # an abort already decided the status; re-raise it unchanged
        raise
    log.error("internal fault in %s", method, exc_info=sys.exc_info())
    context.abort(grpc.StatusCode.INTERNAL, f"internal fault in {method} (see the server log)")
