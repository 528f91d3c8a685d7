"""`BodyLimit`: a request that declares a body over the cap (`Content-Length`) is refused with 413 before a byte of
it is read. A body without a declared length is capped by whatever reads it, with the same message
(`too_large`): the MCP SDK's transports, the gateway's `read_body`."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.web.refusal import TOO_LARGE, Refusal, Refuse


def too_large(size: int, limit: int, *, so_far: bool = False) -> Refusal:
    """The 413 for a body of `size` bytes (`so_far`: counted while it streamed in, so at least that many)."""
    more = " or more" if so_far else ""
    return Refusal(
        413,
        TOO_LARGE,
        f"Request body too large: {size:,} bytes{more}, the limit is {limit:,}. Split the content, or ask the "
        "operator to raise --max-body-bytes.",
    )


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int, refuse: Refuse) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.refuse = refuse

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for key, value in scope.get("headers", ()):
                if key == b"content-length":
                    try:
                        declared = int(value)
                    except ValueError:
                        declared = 0
                    if declared > self.max_bytes:
                        await self.refuse(scope, too_large(declared, self.max_bytes))(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)
