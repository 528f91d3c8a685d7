"""Anthropic Messages requests: `system`, `messages` (user / assistant, string or block content), `tools`
(`{"name", "description", "input_schema"}`; server tools such as `web_search_20250305` also sit there).

Tool results are `tool_result` blocks in user messages (read and replaced by `messages.py`). Blocks the
gateway never touches keep their identity: `thinking` / `redacted_thinking` (signatures must verify), `compaction`,
`server_tool_use`, `web_search_tool_result`, `web_fetch_tool_result`, `code_execution_tool_result`, `mcp_tool_use` /
`mcp_tool_result`, `container_upload`, documents and images.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_offload.apis.anthropic.messages import ROLES, AnthropicFormat
from mcp_offload.apis.history import OPAQUE, History, normalized
from mcp_offload.apis.message import Line, Message, MessageView, ToolCallRef, ToolResult


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


class AnthropicHistory(History):
    api = "anthropic"
    format = AnthropicFormat()
    messages_key = "messages"
    tool_results_follow_as_messages = False

    def opening(self, body: Mapping[str, Any]) -> Any:
        messages = body.get("messages")
        first = messages[0] if isinstance(messages, list) and messages else None
        system = body.get("system")
        return {"system": _blocks(system) if system is not None else None, "first": self._norm_first(first)}

    def _norm_first(self, message: Any) -> Any:
        if not isinstance(message, dict):
            return message
        return self.normalize_message(message)

    def normalize_message(self, message: Message) -> Any:
        """String content equals one text block; empty `citations` lists equal absent ones."""
        out = dict(message)
        if "content" in out:
            blocks = []
            for block in _blocks(out["content"]):
                if isinstance(block, dict) and block.get("type") == "text" and not block.get("citations"):
                    block = {k: v for k, v in block.items() if k != "citations"}
                blocks.append(block)
            out["content"] = blocks
        return normalized(out)

    def readable_view(self, message: Message, index: int) -> MessageView:
        """A user / assistant message with a block the format refuses is read block by block: the blocks it can
        read count (their tool results can be offloaded), the others are kept as they are. Other roles (`system`
        messages between turns, per-turn-control beta) are opaque."""
        role, content = message.get("role"), message.get("content")
        if role not in ROLES or not isinstance(content, list):
            return OPAQUE
        calls: list[ToolCallRef] = []
        results: list[ToolResult] = []
        lines: list[Line] = []
        images = 0
        for slot, block in enumerate(content):
            try:
                view = self.format.view({"role": role, "content": [block]}, index)
            except ValueError:
                continue
            calls.extend(view.calls)
            results.extend(dataclasses.replace(r, slot=slot) for r in view.results)
            if view.lines not in ((), ("",)):  # a block with text (as `view.text != ""`, without joining it)
                lines.extend(view.lines)
            images += view.images
        has_results = any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        return MessageView(
            role=str(role),
            opens_turn=role == "user" and not has_results,
            calls=tuple(calls),
            results=tuple(results),
            lines=tuple(lines),
            images=images,
        )

    def is_result_message(self, message: Message) -> bool:
        content = message.get("content")
        return (
            message.get("role") == "user"
            and isinstance(content, list)
            and bool(content)
            and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
        )

    def merge_results(self, messages: list[Message], at: int, pending: Sequence[Message]) -> list[Message]:
        """The gateway's tool_result blocks go first in the client's next user message (which holds the results of
        the client's own calls of the same response); without one, they form a user message of their own."""
        blocks = [b for m in pending for b in _blocks(m.get("content"))]
        if not blocks:
            return messages
        if at < len(messages) and messages[at].get("role") == "user":
            target = messages[at]
            merged = {**target, "content": [*blocks, *_blocks(target.get("content"))]}
            return [*messages[:at], merged, *messages[at + 1 :]]
        return [*messages[:at], {"role": "user", "content": blocks}, *messages[at:]]
