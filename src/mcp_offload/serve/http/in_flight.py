"""`InFlight`: the count of MCP requests being handled right now, which a graceful shutdown waits on.

A server middleware over every request (every transport, both eras; notifications are not counted), plus
`wait_idle`, bounded by the grace period.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult


class InFlight:
    """Counts the MCP requests between arrival and answer; `wait_idle` returns when none is left."""

    def __init__(self) -> None:
        self.count = 0
        self._idle: anyio.Event | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing to wait for
            return await call_next(ctx)
        if self.count == 0:
            self._idle = anyio.Event()
        self.count += 1
        try:
            return await call_next(ctx)
        finally:
            self.count -= 1
            if self.count == 0 and self._idle is not None:
                self._idle.set()

    async def wait_idle(self, grace_s: float) -> bool:
        """Wait until no MCP request is in flight (True) or `grace_s` passes (False)."""
        with anyio.move_on_after(grace_s):
            if self.count and self._idle is not None:
                await self._idle.wait()
            return True
        return False
