"""Which API a message list is in: named by the caller (`format=`, the public boundary, where the aliases are
accepted), or recognised from the first distinctive message.

Anthropic: `tool_use` / `tool_result` / `image` blocks. OpenAI Chat Completions: `role: "tool"`, `tool_calls`, or a
`system` / `developer` role. Responses: items with a `type` other than `message`, or `input_text` / `output_text`
parts. A list with none of these (plain user / assistant text) reads the same in every API: Chat Completions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import APIS, api_for_format

FORMAT_ALIASES = {"chat": "openai", "openai-chat": "openai", "openai-responses": "responses"}


def api_of_format(name: str) -> LlmApi:
    """The API a caller names with `format=`: its `format_name` (`"openai"` for Chat Completions) or an alias."""
    api = api_for_format(FORMAT_ALIASES.get(name, name))
    if api is None:
        known = ", ".join(a.format_name for a in APIS.values() if a.format_name)
        raise ValueError(f"unknown message format {name!r}: use one of {known}")
    return api


def _field(message: object, key: str) -> Any:
    return message.get(key) if isinstance(message, dict) else getattr(message, key, None)


def _kind_of(message: object) -> ApiName | None:
    kind = _field(message, "type")
    if kind in ("function_call", "function_call_output", "reasoning") or (
        isinstance(kind, str) and kind not in ("message",) and kind.endswith(("_call", "_output"))
    ):
        return "responses"
    role = _field(message, "role")
    if role == "tool" or _field(message, "tool_calls"):
        return "openai_chat"
    content = _field(message, "content")
    if isinstance(content, list):
        for block in content:
            block_type = _field(block, "type")
            if block_type in ("tool_use", "tool_result", "image", "thinking"):
                return "anthropic"
            if block_type in ("input_text", "output_text", "input_image"):
                return "responses"
            if block_type == "image_url":
                return "openai_chat"
    if role in ("system", "developer"):
        return "openai_chat"
    return None


def detect_api(messages: Sequence[object]) -> LlmApi:
    for message in messages:
        found = _kind_of(message)
        if found:
            return APIS[found]
    return APIS["openai_chat"]
