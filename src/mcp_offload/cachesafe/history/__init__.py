"""Each LLM API's request shape (`History`): Anthropic Messages, OpenAI Chat Completions, OpenAI Responses."""

from __future__ import annotations

from mcp_offload.apis.gemini.history import GeminiHistory
from mcp_offload.cachesafe.history.anthropic import AnthropicHistory
from mcp_offload.cachesafe.history.base import History, ResultPart, UserText, canonical_bytes, normalized
from mcp_offload.cachesafe.history.openai_chat import OpenAIChatHistory
from mcp_offload.cachesafe.history.responses import ResponsesHistory

HISTORIES: dict[str, History] = {
    "anthropic": AnthropicHistory(),
    "openai_chat": OpenAIChatHistory(),
    "responses": ResponsesHistory(),
    "gemini": GeminiHistory(),
}


def history_for(api: str) -> History:
    try:
        return HISTORIES[api]
    except KeyError:
        raise ValueError(f"unknown API {api!r}: use one of {', '.join(HISTORIES)}") from None


__all__ = ["HISTORIES", "History", "ResultPart", "UserText", "canonical_bytes", "history_for", "normalized"]
