"""The five tools (`read_large_output`, `search_large_output`, `query_large_output`, `list_outputs`, `offload`) as
tool definitions in each API's request format (each API's `tool_definitions`), built from the same `ToolSpec`s the
MCP server lists: e.g. Anthropic's `{"name", "description", "input_schema"}`, Chat Completions'
`{"type": "function", "function": {…}}`, Gemini's `functionDeclarations`.
"""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.base import LlmApi, ToolDeclaration
from mcp_offload.core.tools import TOOLS


def api_tool_definitions(api: LlmApi, names: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """The five tools (or those in `names`, in the same order) as `api` declares tools."""
    chosen = [
        ToolDeclaration(s.name, s.description, s.input_schema()) for s in TOOLS if names is None or s.name in names
    ]
    return api.tool_definitions(chosen)
