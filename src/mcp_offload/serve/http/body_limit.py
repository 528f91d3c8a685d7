"""`BodyLimit`: an ASGI middleware answering 413 (with a JSON-RPC body) to a declared Content-Length over the limit."""

from __future__ import annotations

import mcp.types as types
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.serve.http.rpc_errors import rpc_error


class BodyLimit:
    """413 with a JSON-RPC body for a declared Content-Length over the limit (the SDK transports also cap
    streamed bodies, with a plain-text 413)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for key, value in scope.get("headers", ()):
                if key == b"content-length":
                    try:
                        declared = int(value)
                    except ValueError:
                        declared = 0
                    if declared > self.max_bytes:
                        message = (
                            f"Request body too large: {declared:,} bytes, the limit is {self.max_bytes:,}. "
                            "Split the content, or ask the operator to raise --max-body-bytes."
                        )
                        await rpc_error(413, types.INVALID_REQUEST, message)(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)
