"""What the APIs served on fixed POST paths share (Anthropic Messages, Chat Completions, Responses): the route is
the path, the model and `stream` are in the JSON body, the session's credential is in the headers, and a tool
definition is one object per tool (`tool_definition`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from mcp_offload.apis.base import Route, ToolDeclaration


class FixedPathsApi:
    paths: ClassVar[tuple[str, ...]]  # the request paths the gateway serves the API on
    relays_unreadable = False
    cache_reads_apart = False

    def relay_claim(self, path: str, headers: Mapping[str, str], query: str) -> int:
        return 0

    def single_choice(self, request: dict[str, Any]) -> bool:
        n = request.get("n")
        return n is None or n == 1

    def route(self, method: str, path: str) -> Route | None:
        return Route() if method == "POST" and path in self.paths else None

    def session_headers(self, headers: Mapping[str, str], query: str) -> Mapping[str, str]:
        return headers

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        return None

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        return body  # the provider caches prefixes by itself

    def tool_definitions(self, tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
        return [self.tool_definition(t.name, t.description, t.input_schema) for t in tools]

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError
