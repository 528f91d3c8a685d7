"""The request side of one LLM API, as the gateway needs it: where the messages and tools sit in a request body,
which messages are the model's own output, where the tool results are, and how expansions are put back.

Reading and replacing tool results is each API's `MessageFormat` (`apis/<name>/messages.py`, the `Compactor`'s too): a
`History` adds only what is request-level (the `messages` / `input` array, `tools`, `system` / `instructions`) and
gateway-specific (model-output runs, expansion merges, normalized matching). Everything here is pure: no I/O, no
mutation of the caller's objects (a changed body is a shallow copy with new lists; untouched messages are the very
same objects, so they serialize to the same bytes).

Never touched, by construction: only the text parts of tool results (`tool_result` blocks, `role: "tool"` messages,
`function_call_output` / `custom_tool_call_output` items) are ever replaced, so system prompts, user text, thinking /
redacted_thinking / reasoning, compaction blocks and server-tool blocks (`server_tool_use`, `web_search_tool_result`,
`mcp_tool_result`, …) pass through as the same objects.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_offload.apis.message import Message, MessageFormat, MessageView, Part, ToolResult

DROPPED_KEYS = frozenset({"cache_control"})  # markers clients move from turn to turn: not content


def normalized(value: Any) -> Any:
    """`value` with what SDK re-serialization changes taken out: null fields and `cache_control` markers dropped
    (key order is taken out by `canonical_bytes`, which sorts keys)."""
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if v is not None and k not in DROPPED_KEYS}
    if isinstance(value, list | tuple):
        return [normalized(v) for v in value]
    return value


def canonical_bytes(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8 (lone surrogates kept): the bytes hashed for matching and session keys."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


@dataclass(frozen=True, slots=True)
class ResultPart:
    """One text part of one tool result in a request."""

    message: int  # index in the message list
    result: ToolResult
    part: Part
    tool: str | None  # the name of the call that produced it (None when no earlier message declares the call)

    @property
    def text(self) -> str:
        return self.part.text or ""


@dataclass(frozen=True, slots=True)
class UserText:
    """A text the user wrote (a paste, typically), where it sits in its message."""

    message: int
    slot: int  # block / part index; -1 when the message's content is a plain string
    text: str


USER_TEXT_TYPES = ("text", "input_text")
OPAQUE = MessageView(role="other", opens_turn=False, pinned=True)  # a message the rewrite keeps as is and skips


class History:
    """Shared behaviour; one subclass per API (`apis/<name>/history.py`)."""

    api: str
    format: MessageFormat
    messages_key: str  # "messages" or "input"
    tool_results_follow_as_messages: bool  # Chat / Responses: one message (item) per result
    # one model response may be several model messages in a row (Responses: its output items; Gemini: the
    # `google-genai` SDK's chat keeps a streamed answer as one model content per chunk, Gemini CLI as one)
    outputs_run_together: bool = False

    # -- the request body ---------------------------------------------------------------------------------
    def messages(self, body: Mapping[str, Any]) -> list[Message] | None:
        """The message list, or None when the body has none this gateway can rewrite (it is then forwarded as is)."""
        found = body.get(self.messages_key)
        if not isinstance(found, list) or not all(isinstance(m, dict) for m in found):
            return None
        return found

    def with_messages(self, body: Mapping[str, Any], messages: list[Message]) -> dict[str, Any]:
        return {**body, self.messages_key: messages}

    def tools(self, body: Mapping[str, Any]) -> list[Any]:
        found = body.get("tools")
        return found if isinstance(found, list) else []

    def with_tools(self, body: Mapping[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """`tools` appended after the client's own tools (keeping the client's in place and in order)."""
        own = self.tools(body)
        names = {self.tool_name(t) for t in own if isinstance(t, dict)}
        added = [t for t in tools if self.tool_name(t) not in names]
        return {**body, "tools": [*own, *added]}

    def tool_name(self, tool: Mapping[str, Any]) -> str | None:
        name = tool.get("name")
        return name if isinstance(name, str) else None

    def opening(self, body: Mapping[str, Any]) -> Any:
        """What identifies a conversation from its start (see session.py)."""
        raise NotImplementedError

    # -- messages ---------------------------------------------------------------------------------------------
    def view(self, message: Message, index: int) -> MessageView:
        """What the rewrite reads of one message. One thing this gateway cannot read never disables the rewrite of
        the whole request: a message of a role it does not know (Anthropic's `role: "system"` messages between
        turns, with the per-turn-control beta) or one it cannot parse is opaque: kept as the same object, skipped
        (no calls, no results, opens no turn). `readable_view` may read such a message in part."""
        try:
            return self.format.view(message, index)
        except ValueError:
            return self.readable_view(message, index)

    def readable_view(self, message: Message, index: int) -> MessageView:
        """The view of a message `format.view` refused: opaque here; an API may read the parts it can."""
        return OPAQUE

    def is_model_output(self, message: Message) -> bool:
        """A message (item) the model produced (assistant text, tool calls, reasoning, built-in tool calls)."""
        return message.get("role") == "assistant"

    def result_parts(self, messages: Sequence[Message], views: Sequence[MessageView]) -> list[ResultPart]:
        """Every text part of every tool result, in order, with the name of the tool that produced it."""
        names: dict[str, str] = {}
        found: list[ResultPart] = []
        for i, view in enumerate(views):
            for call in view.calls:
                names[call.call_id] = call.name
            for result in view.results:
                for part in result.parts:
                    if part.text is not None:
                        found.append(ResultPart(i, result, part, names.get(result.call_id)))
        return found

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        return self.format.replace_parts(message, result, texts)

    def user_texts(self, messages: Sequence[Message], min_chars: int) -> list[UserText]:
        """The user's own texts of at least `min_chars` characters (not tool results, not system prompts)."""
        found: list[UserText] = []
        for i, message in enumerate(messages):
            if message.get("role") != "user" or message.get("type") not in (None, "message"):
                continue
            content = message.get("content")
            if isinstance(content, str):
                if len(content) >= min_chars:
                    found.append(UserText(i, -1, content))
            elif isinstance(content, list):
                for slot, block in enumerate(content):
                    if isinstance(block, dict) and block.get("type") in USER_TEXT_TYPES:
                        text = block.get("text")
                        if isinstance(text, str) and len(text) >= min_chars:
                            found.append(UserText(i, slot, text))
        return found

    def replace_user_text(self, message: Message, slot: int, text: str) -> Message:
        if slot < 0:
            return {**message, "content": text}
        content = list(message["content"])
        content[slot] = {**content[slot], "text": text}
        return {**message, "content": content}

    def normalize_message(self, message: Message) -> Any:
        """The form two serializations of one message share (for matching expansions and session openings)."""
        return normalized(message)

    def normalize_unit(self, messages: Sequence[Message]) -> list[Any]:
        """The form two serializations of one model response (an `output_units` span) share: each message's."""
        return [self.normalize_message(m) for m in messages]

    # -- expansions --------------------------------------------------------------------------------------
    def output_units(self, messages: Sequence[Message]) -> list[tuple[int, int]]:
        """The spans [start, stop) that are one model response as a client sends it back: each assistant message
        (Anthropic, Chat); each maximal run of model messages where `outputs_run_together` (Responses, Gemini)."""
        if not self.outputs_run_together:
            return [(i, i + 1) for i, m in enumerate(messages) if self.is_model_output(m)]
        units: list[tuple[int, int]] = []
        start: int | None = None
        for i, message in enumerate(messages):
            if self.is_model_output(message):
                start = i if start is None else start
            elif start is not None:
                units.append((start, i))
                start = None
        if start is not None:
            units.append((start, len(messages)))
        return units

    def merge_results(self, messages: list[Message], at: int, pending: Sequence[Message]) -> list[Message]:
        """Insert the results of the gateway's own calls (`pending`, in result form) where the client's results for
        the same model response start (`at`: the index right after the restored response)."""
        return [*messages[:at], *pending, *messages[at:]]

    def is_result_message(self, message: Message) -> bool:
        """A message carrying tool results only (Anthropic: a user message of tool_result blocks)."""
        raise NotImplementedError
