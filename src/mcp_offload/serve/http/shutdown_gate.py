"""`ShutdownGate`: once the service's `Drain` (`web/drain.py`) is closed, new MCP requests are refused with a clear
error.

A server middleware (every transport, both eras): while draining, every request (not notifications) gets JSON-RPC
error `SHUTTING_DOWN`; new SSE streams get a 503 with the same code (`refusal`), and /healthz says "draining". The
server closes the drain on SIGTERM (`web/server.py`), before waiting for the calls already in flight
(`in_flight.py`).
"""

from __future__ import annotations

from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from starlette.responses import JSONResponse

from mcp_offload.serve.http.rpc_errors import SHUTTING_DOWN, rpc_error
from mcp_offload.web.drain import Drain


class ShutdownGate:
    """Open while serving; once the drain is closed every new MCP request fails fast (reconnect and retry)."""

    def __init__(self, drain: Drain | None = None) -> None:
        self.drain = drain or Drain()

    @property
    def draining(self) -> bool:
        return self.drain.draining

    def close(self) -> None:
        self.drain.close()

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if self.drain.draining and ctx.request_id is not None:  # notifications pass: nothing waits on them
            raise MCPError(code=SHUTTING_DOWN, message="mcp-offload is shutting down; reconnect and retry.")
        return await call_next(ctx)

    @staticmethod
    def refusal() -> JSONResponse:
        """The HTTP answer to a new long-lived connection (an SSE stream) while draining."""
        return rpc_error(503, SHUTTING_DOWN, "mcp-offload is shutting down")
