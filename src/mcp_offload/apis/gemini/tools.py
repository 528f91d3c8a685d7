"""Tools as Gemini declares them: one Tool object of `functionDeclarations`, each schema as `parametersJsonSchema`
(full JSON Schema, as Gemini CLI declares its own tools; the older `parameters` field takes only an OpenAPI
subset)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import ToolDeclaration


def function_declarations(tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
    """The Tool objects (here: one) declaring `tools`, in their order."""
    declarations = [
        {"name": t.name, "description": t.description, "parametersJsonSchema": t.input_schema} for t in tools
    ]
    return [{"functionDeclarations": declarations}]
