"""The OpenAI Chat Completions API (`POST /v1/chat/completions`) as one `LlmApi`."""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.defaults import ApiDefaults
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.openai_chat.dialect import ChatDialect, stream_error_event
from mcp_offload.apis.openai_chat.history import OpenAIChatHistory
from mcp_offload.apis.openai_chat.messages import OpenAIChatFormat
from mcp_offload.apis.openai_error import openai_error_document


class OpenAIChatApi(ApiDefaults):
    name: ApiName = "openai_chat"
    aliases: tuple[str, ...] = ("openai", "chat", "openai-chat")
    title = "OpenAI Chat Completions"
    litellm_call_types: tuple[str, ...] = ("completion", "acompletion")
    answer_field = "choices"
    # 503 "The engine is currently overloaded, please try again later" (platform.openai.com/docs/guides/error-codes;
    # 429 is for the caller's own rate limits and quota); the SDKs raise InternalServerError and retry it
    overloaded_status = 503

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.messages = OpenAIChatFormat()
        self.history = OpenAIChatHistory()
        self.dialect = ChatDialect()

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        return {"type": "function", "function": {"name": name, "description": description, "parameters": input_schema}}

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        options = request.get("stream_options")
        if isinstance(options, dict) and options.get("include_usage") is True:
            return None
        return {**body, "stream_options": {**(options or {}), "include_usage": True}}

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return openai_error_document(status, code, message)

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return stream_error_event(code, message)

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"OPENAI_BASE_URL": gateway + "/v1"}
