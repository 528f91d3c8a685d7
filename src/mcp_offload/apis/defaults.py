"""What most APIs answer alike (`ApiDefaults`, a base an API package may take or not): a JSON body the gateway
cannot read is refused rather than relayed, one answer unless `n` asks for more, a stream reports its usage unasked,
the provider caches prefixes without markers, and a tool definition is one object per tool (`tool_definition`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import ToolDeclaration


class ApiDefaults:
    aliases: tuple[str, ...] = ()
    relays_unreadable = False
    litellm_call_types: tuple[str, ...] = ()

    def single_choice(self, request: dict[str, Any]) -> bool:
        n = request.get("n")
        return n is None or n == 1

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        return body  # the provider caches prefixes by itself

    def tool_definitions(self, tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
        return [self.tool_definition(t.name, t.description, t.input_schema) for t in tools]

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError
