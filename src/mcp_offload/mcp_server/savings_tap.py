"""Feeding the savings record from our own tools, through the server's extension seam (`intercept_tool`):
a direct `offload` counts as one result seen and offloaded (its tokens minus the reference's are kept out), and
every successful read / search / query counts the tokens of the text it returned as pulled back.

`build_server` puts this extension innermost, so it sees the tool's own result. The proxy's results are counted by
the proxy itself (proxy/router.py), which knows the upstream server and tool.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import mcp.types as types

from mcp_offload.core.tools import READ_BACK_TOOLS, CallContext
from mcp_offload.mcp_server.content_blocks import text_of
from mcp_offload.mcp_server.extension import Extension, NextTool
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.savings.record import DIRECT, SavingsRecord
from mcp_offload.tokens import TokenCounter

log = logging.getLogger(__name__)

OFFLOAD_TOOL = "offload"
_INLINE_COUNT_CHARS = 20_000  # larger texts are counted off the event loop


# The last result counted and its count: in proxy mode the tap (innermost) and the router's `proxy_status`
# accounting (outer) both ask for the same result object, which is then tokenized once, not twice.
_last_counted: tuple[types.CallToolResult, TokenCounter, int] | None = None


async def count_text(counter: TokenCounter, result: types.CallToolResult) -> int:
    """The tokens of a result's text, as the model received it."""
    global _last_counted
    last = _last_counted
    if last is not None and last[0] is result and last[1] is counter:
        return last[2]
    text = text_of(result.content)
    if len(text) <= _INLINE_COUNT_CHARS:
        tokens = counter.count(text)
    else:
        tokens = await anyio.to_thread.run_sync(counter.count, text)
    _last_counted = (result, counter, tokens)
    return tokens


class SavingsTap(Extension):
    """Counts our own tools' side of the savings into `record` (nothing, when the record keeps nothing)."""

    def __init__(self, record: SavingsRecord, counter: TokenCounter) -> None:
        self.record = record
        self.counter = counter

    async def intercept_tool(
        self, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
    ) -> types.CallToolResult:
        result = await call_next()
        if result.is_error or not self.record.enabled or (name != OFFLOAD_TOOL and name not in READ_BACK_TOOLS):
            return result
        try:
            if name == OFFLOAD_TOOL:
                stored = result_of(result).get("tokens")
                if isinstance(stored, int):
                    reference = await count_text(self.counter, result)
                    kept_out = max(0, stored - reference)
                    await self.record.add(DIRECT, name, results_seen=1, results_offloaded=1, tokens_kept_out=kept_out)
            else:
                tokens = await count_text(self.counter, result)
                await self.record.add(DIRECT, name, retrievals=1, tokens_retrieved=tokens)
        except Exception:  # counting must never fail the call
            log.warning("savings record: could not count a %s call", name, exc_info=True)
        return result
