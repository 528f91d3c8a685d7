"""`AccessLog`: an ASGI middleware writing one structured line per HTTP request to `mcp_offload.serve.http` (at INFO).

Fields: method, path, status, ms, client address, principal fingerprint, MCP session prefix, protocol version.
Tokens never appear.
"""

from __future__ import annotations

import logging
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_offload.serve.http.auth import principal_label, principal_of

access_log = logging.getLogger("mcp_offload.serve.http")


class AccessLog:
    """One structured line per HTTP request (at its end, so long-lived streams log when they close)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            headers = dict(scope.get("headers", ()))
            session = headers.get(b"mcp-session-id", b"").decode("latin-1")[:8]
            client = scope.get("client")
            access_log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "fields": {
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status,
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                        "client": client[0] if client else None,
                        "principal": principal_label(principal_of(scope)),
                        "session": session or None,
                        "protocol": headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None,
                    }
                },
            )
