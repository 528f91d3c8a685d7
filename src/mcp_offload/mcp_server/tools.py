"""The five tools as MCP sees them: a `ToolSpec` (core/tools.py) as a `types.Tool`, a `ToolAnswer` (core/pipeline.py)
as a `CallToolResult`: text for the model, `_meta` for programs. Nothing else about a tool is decided here.

What each tool answers costs the model what its text costs, in every client. Claude Code puts a result's
`structuredContent`, when there is one, into the model's context instead of the text (as compact JSON); other
clients show the text. So no tool sends `structuredContent` or declares an `outputSchema` (which would oblige it
to). Measured on real outputs (JSON, a git log, source code; o200k tokens), the structured form of every tool cost
more than its text: read 1.07-1.22x, search 1.27-2.2x, query 1.14-1.20x, offload 1.18-1.94x, list_outputs 1.26x.
It cannot be made lean: what these tools return is stored text (lines, records, jq output, preview lines), and in
JSON every quote, backslash and newline of it is escaped and every field is named once per hit or row; the text
says the same once, in the forms a model reads (`4812: …`, `lines 10–60 of 400`). The lean JSON that drops empty
and default fields still costs more than the text on every tool but list_outputs, and one rule for all tools is
simpler for clients than a mixed one.

Programs get the whole result model (`results.py`) under `_meta["mcp-offload/result"]` (`RESULT_META`): hosts
keep `_meta` from the model (Claude Code does; tests/clients checks it), as the OpenAI Apps SDK does for its
component-only data. The in-process API (`api.py`) returns the same models.

Tool and parameter names are a public contract (core/tools.py). Errors from below (`OffloadError`) are translated
once, in `core/pipeline.py`, into an answer written for the model; here they only become `isError` results.
"""

from __future__ import annotations

from typing import Any

import mcp.types as types

from mcp_offload.core.pipeline import ToolAnswer, run_tool
from mcp_offload.core.tools import TOOLS, TOOLS_BY_NAME, CallContext, ToolSpec
from mcp_offload.mcp_server.client_caps import TOOL_META

__all__ = [
    "RESULT_META",
    "TOOLS",
    "TOOLS_BY_NAME",
    "call_tool",
    "error_result",
    "result_of",
    "result_to_mcp",
    "tool_of",
]

RESULT_META = "mcp-offload/result"  # the `_meta` key of a tool's whole result model, for programs (never the model)


def tool_of(spec: ToolSpec) -> types.Tool:
    """The spec as an MCP tool (its annotations say what it may change; its `_meta`, how big an answer a client
    should keep inline: client_caps.TOOL_META)."""
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema(),
        annotations=types.ToolAnnotations(
            title=spec.title,
            read_only_hint=spec.read_only,
            destructive_hint=False,
            idempotent_hint=spec.read_only,
            open_world_hint=False,
        ),
        _meta=dict(TOOL_META),
    )


def result_to_mcp(answer: ToolAnswer, *, with_meta: bool = True) -> types.CallToolResult:
    """An answer as an MCP tool result: its text, `isError`, and the result model under `_meta[RESULT_META]` (unless
    `with_meta` is false: for a client that shows its model the whole result, `_meta` included)."""
    if answer.is_error:
        return error_result(answer.text)
    meta = None if answer.result is None or not with_meta else {RESULT_META: answer.result}
    return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)], _meta=meta)


def result_of(result: types.CallToolResult) -> dict[str, Any]:
    """The whole result model of one of our tools' results (`_meta[RESULT_META]`); {} for an error result."""
    found = (result.meta or {}).get(RESULT_META)
    return found if isinstance(found, dict) else {}


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


async def call_tool(spec: ToolSpec, call: CallContext, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """Run one call through the core pipeline and answer in MCP's form. Never raises for bad input or failures."""
    return result_to_mcp(await run_tool(spec, call, arguments), with_meta=not call.cap.raw_json)
