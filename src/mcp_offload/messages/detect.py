"""Which format a message list is in: named by the caller, or recognised from the first distinctive message.

Anthropic: `tool_use` / `tool_result` / `image` blocks. OpenAI Chat Completions: `role: "tool"`, `tool_calls`, or a
`system` / `developer` role. Responses: items with a `type` other than `message`, or `input_text` / `output_text`
parts. A list with none of these (plain user / assistant text) reads the same in every format: Chat Completions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_offload.messages.anthropic import AnthropicFormat
from mcp_offload.messages.base import MessageFormat
from mcp_offload.messages.openai_chat import OpenAIChatFormat
from mcp_offload.messages.responses import ResponsesFormat

FORMATS: dict[str, MessageFormat] = {
    "anthropic": AnthropicFormat(),
    "openai": OpenAIChatFormat(),
    "responses": ResponsesFormat(),
}
ALIASES = {"chat": "openai", "openai-chat": "openai", "openai-responses": "responses"}


def get_format(name: str) -> MessageFormat:
    key = ALIASES.get(name, name)
    if key not in FORMATS:
        raise ValueError(f"unknown message format {name!r}: use one of {', '.join(FORMATS)}")
    return FORMATS[key]


def _field(message: object, key: str) -> Any:
    return message.get(key) if isinstance(message, dict) else getattr(message, key, None)


def _kind_of(message: object) -> str | None:
    kind = _field(message, "type")
    if kind in ("function_call", "function_call_output", "reasoning") or (
        isinstance(kind, str) and kind not in ("message",) and kind.endswith(("_call", "_output"))
    ):
        return "responses"
    role = _field(message, "role")
    if role == "tool" or _field(message, "tool_calls"):
        return "openai"
    content = _field(message, "content")
    if isinstance(content, list):
        for block in content:
            block_type = _field(block, "type")
            if block_type in ("tool_use", "tool_result", "image", "thinking"):
                return "anthropic"
            if block_type in ("input_text", "output_text", "input_image"):
                return "responses"
            if block_type == "image_url":
                return "openai"
    if role in ("system", "developer"):
        return "openai"
    return None


def detect_format(messages: Sequence[object]) -> MessageFormat:
    for message in messages:
        found = _kind_of(message)
        if found:
            return FORMATS[found]
    return FORMATS["openai"]
