"""The Gemini API (`POST /{version}/models/{model}:generateContent` / `:streamGenerateContent`) as one `LlmApi`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import ToolDeclaration
from mcp_offload.apis.dialect import Dialect
from mcp_offload.apis.gemini import errors
from mcp_offload.apis.gemini.dialect import GeminiDialect
from mcp_offload.apis.gemini.history import GeminiHistory
from mcp_offload.apis.gemini.messages import GeminiFormat
from mcp_offload.apis.gemini.tools import function_declarations
from mcp_offload.apis.history import History
from mcp_offload.apis.message import MessageFormat
from mcp_offload.apis.names import ApiName


class GeminiApi:
    name: ApiName = "gemini"
    aliases: tuple[str, ...] = ()
    title = "Gemini API"
    relays_unreadable = True  # a body the gateway cannot read: the upstream answers it
    # 503 UNAVAILABLE "The model is overloaded. Please try again later." (ai.google.dev/gemini-api/docs/troubleshooting;
    # 429 RESOURCE_EXHAUSTED is the caller's quota); google-genai raises errors.ServerError
    overloaded_status = 503
    litellm_call_types: tuple[str, ...] = ()  # LiteLLM's guardrail hooks do not serve generateContent
    answer_field = "candidates"

    messages: MessageFormat
    history: History
    dialect: Dialect

    def __init__(self) -> None:
        self.messages = GeminiFormat()
        self.history = GeminiHistory()
        self.dialect = GeminiDialect()

    def single_choice(self, request: dict[str, Any]) -> bool:
        config = request.get("generationConfig")
        candidates = config.get("candidateCount") if isinstance(config, dict) else None
        return candidates is None or candidates == 1

    def asking_stream_usage(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any] | None:
        return None  # its stream reports usageMetadata unasked

    def with_cache_breakpoints(self, body: dict[str, Any]) -> dict[str, Any]:
        return body  # implicit caching: no markers

    def tool_definitions(self, tools: Sequence[ToolDeclaration]) -> list[dict[str, Any]]:
        return function_declarations(tools)

    def error_document(self, status: int, code: str, message: str) -> dict[str, Any]:
        return errors.error_document(status, message)

    def stream_error_event(self, code: str, message: str, sequence_number: int = 0) -> bytes:
        return errors.stream_error_event(message)

    def client_env(self, gateway: str) -> dict[str, str]:
        return {"GOOGLE_GEMINI_BASE_URL": gateway}
