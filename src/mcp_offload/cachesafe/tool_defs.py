"""The five tools (`read_large_output`, `search_large_output`, `query_large_output`, `list_outputs`, `offload`) as
tool definitions in each API's request format (each API's `tool_definition`), built from the same `ToolSpec`s the
MCP server lists.

- `"anthropic"`: `{"name", "description", "input_schema"}` (Messages API `tools=`);
- `"openai"`: `{"type": "function", "function": {"name", "description", "parameters"}}` (Chat Completions);
- `"responses"`: `{"type": "function", "name", "description", "parameters", "strict": False}` (Responses API).
"""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.base import LlmApi, ToolDeclaration
from mcp_offload.apis.registry import APIS, api_for_format
from mcp_offload.core.tools import TOOLS

_ALIASES = {"chat": "openai"}


def tool_definitions(format: str) -> list[dict[str, Any]]:
    """The five tools for the API a `Compactor` caller names with `format` (its public word, or "chat")."""
    api = api_for_format(_ALIASES.get(format, format))
    if api is None:
        known = ", ".join(a.format_name for a in APIS.values() if a.format_name)
        raise ValueError(f"unknown tool format {format!r}: use one of {known}")
    return api_tool_definitions(api)


def api_tool_definitions(api: LlmApi, names: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """The five tools (or those in `names`, in the same order) as `api` declares tools."""
    chosen = [
        ToolDeclaration(s.name, s.description, s.input_schema()) for s in TOOLS if names is None or s.name in names
    ]
    return api.tool_definitions(chosen)
