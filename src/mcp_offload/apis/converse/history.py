"""Bedrock Converse requests: `system` (a list of `{"text"}` / `{"cachePoint"}` blocks), `messages`, and the tools in
`toolConfig.tools` (`{"toolSpec": {"name", "description", "inputSchema": {"json": …}}}`, `{"cachePoint"}` markers
between them), `toolConfig.toolChoice`.

Tool results are `toolResult` blocks in user messages (read and replaced by `messages.py`). `cachePoint` blocks are
markers a client may move from turn to turn (like Anthropic's `cache_control`): they are not content, so the
normalized form that matching and session keys read leaves them out. Reasoning blocks keep their identity (their
signatures must verify).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_offload.apis.converse.messages import ConverseFormat, block_kind
from mcp_offload.apis.history import History, UserText, normalized
from mcp_offload.apis.message import Message


def without_cache_points(blocks: Any) -> Any:
    return [b for b in blocks if block_kind(b) != "cachePoint"] if isinstance(blocks, list) else blocks


class ConverseHistory(History):
    api = "converse"
    format = ConverseFormat()
    messages_key = "messages"
    tool_results_follow_as_messages = False

    def tools(self, body: Mapping[str, Any]) -> list[Any]:
        config = body.get("toolConfig")
        found = config.get("tools") if isinstance(config, dict) else None
        return found if isinstance(found, list) else []

    def with_tools(self, body: Mapping[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
        """`tools` appended after the client's own tools (and after a `cachePoint` that ends them: the client's
        cached prefix stays the same bytes)."""
        own = self.tools(body)
        names = {self.tool_name(t) for t in own if isinstance(t, dict)}
        added = [t for t in tools if self.tool_name(t) not in names]
        config = body.get("toolConfig")
        return {**body, "toolConfig": {**(config if isinstance(config, dict) else {}), "tools": [*own, *added]}}

    def tool_name(self, tool: Mapping[str, Any]) -> str | None:
        spec = tool.get("toolSpec")
        name = spec.get("name") if isinstance(spec, dict) else None
        return name if isinstance(name, str) else None

    def opening(self, body: Mapping[str, Any]) -> Any:
        messages = body.get("messages")
        first = messages[0] if isinstance(messages, list) and messages else None
        system = body.get("system")
        return {
            "system": normalized(without_cache_points(system)),
            "first": self.normalize_message(first) if isinstance(first, dict) else first,
        }

    def normalize_message(self, message: Message) -> Any:
        out = dict(message)
        if "content" in out:
            out["content"] = without_cache_points(out["content"])
        return normalized(out)

    def is_result_message(self, message: Message) -> bool:
        content = without_cache_points(message.get("content"))
        return (
            message.get("role") == "user"
            and isinstance(content, list)
            and bool(content)
            and all(block_kind(b) == "toolResult" for b in content)
        )

    def merge_results(self, messages: list[Message], at: int, pending: Sequence[Message]) -> list[Message]:
        """The gateway's toolResult blocks go first in the client's next user message (which answers the client's
        own calls of the same response); without one, they form a user message of their own."""
        blocks = [b for m in pending for b in m.get("content") or []]
        if not blocks:
            return messages
        if at < len(messages) and messages[at].get("role") == "user":
            target = messages[at]
            merged = {**target, "content": [*blocks, *(target.get("content") or [])]}
            return [*messages[:at], merged, *messages[at + 1 :]]
        return [*messages[:at], {"role": "user", "content": blocks}, *messages[at:]]

    def user_texts(self, messages: Sequence[Message], min_chars: int) -> list[UserText]:
        found: list[UserText] = []
        for i, message in enumerate(messages):
            if message.get("role") != "user" or not isinstance(message.get("content"), list):
                continue
            for slot, block in enumerate(message["content"]):
                text = block.get("text") if block_kind(block) == "text" else None
                if isinstance(text, str) and len(text) >= min_chars:
                    found.append(UserText(i, slot, text))
        return found

    def replace_user_text(self, message: Message, slot: int, text: str) -> Message:
        content = list(message["content"])
        content[slot] = {"text": text}
        return {**message, "content": content}
