"""`AccessLog`: one structured line per HTTP request on the front end's logger (at INFO), written when the answer
has ended (a long-lived stream logs when it closes).

Fields: method, path, status (as sent; 0 when nothing was), ms, client address, principal fingerprint, then what
the front end adds: from the request's headers (`fields`: the MCP service's session and protocol version) and from
its routes while they run (`log_fields(scope)`: the gateway's API, rewrite and loop figures). Tokens never appear.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_offload.web.token_check import principal_label, principal_of

LOG_FIELDS_KEY = "mcp_offload.log_fields"  # in scope["state"]: what the routes add to the request's line


def log_fields(scope: Scope) -> dict[str, Any]:
    """The request's log line fields a route may add to (the line is written after the route returns)."""
    fields: dict[str, Any] = scope.setdefault("state", {}).setdefault(LOG_FIELDS_KEY, {})
    return fields


class AccessLog:
    def __init__(
        self, app: ASGIApp, logger: logging.Logger, fields: Callable[[Scope], dict[str, Any]] | None = None
    ) -> None:
        self.app = app
        self.log = logger
        self.fields = fields

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0
        added = log_fields(scope)

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            client = scope.get("client")
            line: dict[str, Any] = {
                "method": scope["method"],
                "path": scope["path"],
                "status": status,
                "ms": round((time.perf_counter() - started) * 1000, 2),
                "client": client[0] if client else None,
                "principal": principal_label(principal_of(scope)),
            }
            if self.fields is not None:
                line.update(self.fields(scope))
            line.update(added)
            self.log.info("%s %s %s", scope["method"], scope["path"], status, extra={"fields": line})
