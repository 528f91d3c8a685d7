"""The OpenAI Responses API (`POST /v1/responses`) as one `LlmApi`."""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.defaults import ApiDefaults
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.openai_error import openai_error_document
from mcp_offload.apis.responses.dialect import ResponsesDialect, stream_error_event
from mcp_offload.apis.responses.history import ResponsesHistory
from mcp_offload.apis.responses.messages import ResponsesFormat


class ResponsesApi(ApiDefaults):
    name: ApiName = "responses"
    aliases: tuple[str, ...] = ("openai-responses",)
    title = "OpenAI Responses"
    litellm_call_types: tuple[str, ...] = ("responses", "aresponses")
    answer_field = "output"
    overloaded_status = 503  # OpenAI's overloaded answer, as for Chat Completions (openai_chat/api.py)

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.messages = ResponsesFormat()
        self.history = ResponsesHistory()
        self.dialect = ResponsesDialect()

    def tool_definition(self, name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": input_schema,
            "strict": False,
        }

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return openai_error_document(status, code, message)

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return stream_error_event(code, message, sequence_number)

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"OPENAI_BASE_URL": gateway + "/v1"}
