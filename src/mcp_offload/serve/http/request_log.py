"""`RequestLog`: one structured line per MCP request on `mcp_offload.requests` (at INFO).

A server middleware (every transport, both eras; notifications are not logged). Fields: MCP method, tool, outcome
(ok / tool_error / error), ms, protocol version, principal fingerprint. Tokens and arguments never appear.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult

from mcp_offload.serve.http.auth import request_principal
from mcp_offload.web.token_check import principal_label

request_log = logging.getLogger("mcp_offload.requests")


class RequestLog:
    """Times each MCP request and logs how it ended."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:
            return await call_next(ctx)
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            outcome = "tool_error" if isinstance(result, dict) and result.get("isError") else "ok"
            return result
        finally:
            if request_log.isEnabledFor(logging.INFO):
                _log_request(ctx, outcome, time.perf_counter() - started)


def _log_request(ctx: ServerRequestContext[Any, Any], outcome: str, elapsed_s: float) -> None:
    params = ctx.params or {}
    tool = params.get("name") if ctx.method == "tools/call" else None
    request_log.info(
        "%s %s",
        f"{ctx.method} {tool}" if tool else ctx.method,
        outcome,
        extra={
            "fields": {
                "mcp_method": ctx.method,
                "tool": tool,
                "outcome": outcome,
                "ms": round(elapsed_s * 1000, 2),
                "protocol": ctx.protocol_version,
                "principal": principal_label(request_principal(ctx)),
            }
        },
    )
