"""The Anthropic Messages API (`POST /v1/messages`) as one `LlmApi`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.anthropic import errors
from mcp_offload.apis.anthropic.client_breakpoints import with_client_breakpoints
from mcp_offload.apis.anthropic.dialect import AnthropicDialect
from mcp_offload.apis.anthropic.history import AnthropicHistory
from mcp_offload.apis.anthropic.messages import AnthropicFormat
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.fixed_paths import FixedPathsApi
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName, Provider


class AnthropicApi(FixedPathsApi):
    name: ApiName = "anthropic"
    format_name: str | None = "anthropic"
    title = "Anthropic Messages"
    paths = ("/v1/messages",)
    provider: Provider = "anthropic"
    cache_reads_apart = True

    def relay_claim(self, path: str, headers: Mapping[str, str], query: str) -> int:
        return 1 if path.startswith("/v1/messages") or "anthropic-version" in headers or "x-api-key" in headers else 0

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.messages = AnthropicFormat()
        self.history = AnthropicHistory()
        self.dialect = AnthropicDialect()

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "description": description, "input_schema": input_schema}

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        return with_client_breakpoints(body)

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return errors.error_document(status, code, message)

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return errors.stream_error_event(code, message, sequence_number)
