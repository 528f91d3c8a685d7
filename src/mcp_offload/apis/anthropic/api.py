"""The Anthropic Messages API (`POST /v1/messages`) as one `LlmApi`."""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.anthropic import errors
from mcp_offload.apis.anthropic.client_breakpoints import with_client_breakpoints
from mcp_offload.apis.anthropic.dialect import AnthropicDialect
from mcp_offload.apis.anthropic.history import AnthropicHistory
from mcp_offload.apis.anthropic.messages import AnthropicFormat
from mcp_offload.apis.defaults import ApiDefaults
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName


class AnthropicApi(ApiDefaults):
    name: ApiName = "anthropic"
    title = "Anthropic Messages"
    litellm_call_types: tuple[str, ...] = ("anthropic_messages", "aanthropic_messages")
    answer_field = "content"
    # 529 overloaded_error: "the API is temporarily overloaded" (docs.anthropic.com/en/api/errors); the SDKs raise
    # OverloadedError (anthropic >= 0.50) and retry it
    overloaded_status = 529

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

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"ANTHROPIC_BASE_URL": gateway}
