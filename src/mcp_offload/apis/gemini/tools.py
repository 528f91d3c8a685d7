"""The retrieval tools as Gemini `functionDeclarations`: the MCP server's own names, descriptions and argument
schemas (`core.tools`), the schema as `parametersJsonSchema` (full JSON Schema, as Gemini CLI declares its own
tools; the older `parameters` field takes only an OpenAPI subset). One Tool object holds them all."""

from __future__ import annotations

from typing import Any

from mcp_offload.core.tools import TOOLS


def function_declarations(names: frozenset[str]) -> list[dict[str, Any]]:
    """The Tool objects (here: one) declaring the tools in `names`, in the MCP server's order."""
    declarations = [
        {"name": s.name, "description": s.description, "parametersJsonSchema": s.input_schema()}
        for s in TOOLS
        if s.name in names
    ]
    return [{"functionDeclarations": declarations}]
