"""The five tools (`read_large_output`, `search_large_output`, `query_large_output`, `list_outputs`, `offload`) as
tool definitions in each SDK's format, built from the same `ToolSpec`s the MCP server lists.

- `"anthropic"`: `{"name", "description", "input_schema"}` (Messages API `tools=`);
- `"openai"`: `{"type": "function", "function": {"name", "description", "parameters"}}` (Chat Completions);
- `"responses"`: `{"type": "function", "name", "description", "parameters", "strict": False}` (Responses API).
"""

from __future__ import annotations

from typing import Any

from mcp_offload.core.tools import TOOLS

TOOL_FORMATS = ("anthropic", "openai", "responses")


def tool_definitions(format: str) -> list[dict[str, Any]]:
    if format == "anthropic":
        return [{"name": s.name, "description": s.description, "input_schema": s.input_schema()} for s in TOOLS]
    if format in ("openai", "chat"):
        return [
            {
                "type": "function",
                "function": {"name": s.name, "description": s.description, "parameters": s.input_schema()},
            }
            for s in TOOLS
        ]
    if format == "responses":
        return [
            {
                "type": "function",
                "name": s.name,
                "description": s.description,
                "parameters": s.input_schema(),
                "strict": False,
            }
            for s in TOOLS
        ]
    raise ValueError(f"unknown tool format {format!r}: use one of {', '.join(TOOL_FORMATS)}")
