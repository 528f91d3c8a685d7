"""Which LLM API a bare message list is written in: Anthropic Messages, OpenAI Chat Completions or Responses input
items. The compression service (`compress_api`) gets lists without their request around them, so it tells the
format from the messages themselves when the caller sends no `format`.

Each message is read for the formats it can belong to:

- Anthropic: role `user` / `assistant`, content a string or typed blocks (`tool_use`, `tool_result`, `thinking`,
  `document`, server-tool blocks, …: any block type the other two do not own, as Anthropic adds types often).
- Chat Completions: roles `system`, `developer`, `user`, `assistant`, `tool`, `function`; only Chat has role `tool` /
  `function`, `tool_calls`, `tool_call_id`, `function_call` and the `image_url` / `input_audio` parts.
- Responses: typed items (`function_call`, `function_call_output`, `reasoning`, …, `message`) or role messages
  whose parts are `input_text`, `output_text`, `input_image`, `input_file`, …

The list's format is the one every message can belong to. A list all three read alike (role and string content
only) holds no tool result in any of them, so the choice cannot change the answer (`shape_of` says "openai_chat",
the contract's default). A list no format reads whole (messages of two formats, or a message of none, e.g.
Gemini's `{"role": "model", "parts": …}`) is refused with `ShapeError`, naming the messages that disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_offload.apis.names import ApiName

__all__ = ["FORMAT_NAMES", "ShapeError", "formats_of", "shape_of"]

ORDER: tuple[ApiName, ...] = ("openai_chat", "anthropic", "responses")  # the pick among formats that read alike
FORMAT_NAMES: dict[ApiName, str] = {
    "anthropic": "Anthropic Messages",
    "openai_chat": "OpenAI Chat Completions",
    "responses": "OpenAI Responses",
}

CHAT_ONLY_PARTS = frozenset({"image_url", "input_audio", "file"})
CHAT_ONLY_ROLES = frozenset({"tool", "function"})
CHAT_ONLY_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call"})
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
RESPONSES_ONLY_PARTS = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "summary_text", "reasoning_text"}
)
RESPONSES_ROLES = frozenset({"system", "developer", "user", "assistant"})
ANTHROPIC_ROLES = frozenset({"user", "assistant"})
CHAT_PARTS = CHAT_ONLY_PARTS | {"text", "refusal"}


class ShapeError(ValueError):
    """The messages match no single format; the message says which ones and why, in one line."""


def _part_types(content: Any) -> list[str] | None:
    """The types of a content list's parts; [] for a string or null content; None for anything else."""
    if content is None or isinstance(content, str):
        return []
    if not isinstance(content, list):
        return None
    types: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or not isinstance(part.get("type"), str):
            return None
        types.append(part["type"])
    return types


def _anthropic_block(kind: str) -> bool:
    """Anthropic adds block types often: any type no other format owns is taken as one of its blocks."""
    return kind not in CHAT_ONLY_PARTS and kind not in RESPONSES_ONLY_PARTS and kind != "refusal"


def formats_of(message: Mapping[str, Any]) -> frozenset[ApiName]:
    """The formats `message` can belong to (empty: none)."""
    found: set[ApiName] = set()
    kind, role = message.get("type"), message.get("role")
    if isinstance(kind, str) and kind != "message":  # a typed Responses item: a call, an output, reasoning, …
        return frozenset({"responses"}) if role is None or isinstance(role, str) else frozenset()
    if not isinstance(role, str):
        return frozenset()
    types = _part_types(message.get("content"))
    if types is None:
        return frozenset()
    chat_keys = CHAT_ONLY_KEYS & message.keys()
    if (
        kind is None
        and role in CHAT_ROLES
        and all(t in CHAT_PARTS for t in types)
        and (role in CHAT_ONLY_ROLES or message.get("content") is not None or chat_keys)
    ):
        found.add("openai_chat")
    if chat_keys or message.get("content") is None:
        return frozenset(found)
    if role in ANTHROPIC_ROLES and all(_anthropic_block(t) for t in types):
        found.add("anthropic")
    if role in RESPONSES_ROLES and all(t in RESPONSES_ONLY_PARTS or t == "refusal" for t in types):
        found.add("responses")
    return frozenset(found)


def _describe(index: int, message: Mapping[str, Any]) -> str:
    role, kind = message.get("role"), message.get("type")
    parts = _part_types(message.get("content")) or []
    what = f"type {kind!r}" if kind is not None else f"role {role!r}"
    if parts:
        what += " with " + ", ".join(sorted(set(parts))[:3]) + " parts"
    return f"messages[{index}] ({what})"


def _names(formats: frozenset[ApiName]) -> str:
    return " or ".join(FORMAT_NAMES[f] for f in ORDER if f in formats)


def shape_of(messages: Sequence[Mapping[str, Any]]) -> ApiName:
    """The format every message of `messages` can belong to (see the module docstring); raises `ShapeError`."""
    common: set[ApiName] = set(ORDER)
    seen: list[tuple[int, frozenset[ApiName]]] = []
    for i, message in enumerate(messages):
        fits = formats_of(message)
        if not fits:
            raise ShapeError(
                f"{_describe(i, message)} is not a message of any known format "
                f'({", ".join(FORMAT_NAMES.values())}); send "format" or fix the message.'
            )
        narrower = fits & common
        if not narrower:
            j, theirs = next(((j, f) for j, f in seen if not (f & fits)), seen[-1])
            raise ShapeError(
                f"The messages mix formats: {_describe(i, message)} reads as {_names(fits)} but "
                f"{_describe(j, messages[j])} as {_names(theirs)}; "
                'send one format (and "format" to name it).'
            )
        common &= narrower
        seen.append((i, fits))
    return next(f for f in ORDER if f in common)
