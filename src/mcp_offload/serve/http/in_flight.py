"""`InFlight`: the MCP requests being handled right now, counted into the service's `Drain` (`web/drain.py`),
which a graceful shutdown waits on.

A server middleware over every request (every transport, both eras; notifications are not counted): MCP requests,
not HTTP ones, because on SSE a request's HTTP POST is answered (202) long before the request is.
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from mcp_offload.web.drain import Drain


class InFlight:
    """Counts the MCP requests between arrival and answer; `wait_idle` returns when none is left."""

    def __init__(self, drain: Drain | None = None) -> None:
        self.drain = drain or Drain()

    @property
    def count(self) -> int:
        return self.drain.count

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing to wait for
            return await call_next(ctx)
        self.drain.enter()
        try:
            return await call_next(ctx)
        finally:
            self.drain.leave()

    async def wait_idle(self, grace_s: float) -> bool:
        """Wait until no MCP request is in flight (True) or `grace_s` passes (False)."""
        return await self.drain.wait_idle(grace_s)
