"""OpenAI Chat Completions requests: `messages` (system / developer / user / assistant / tool), `tools`
(`{"type": "function", "function": {"name", …}}`).

Tool results are `role: "tool"` messages (read and replaced by `messages.py`); everything else keeps
its identity. An assistant message's `tool_calls` are answered by the tool messages right after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.history import History, normalized
from mcp_offload.apis.message import Message
from mcp_offload.apis.openai_chat.messages import OpenAIChatFormat

PINNED_ROLES = ("system", "developer")


class OpenAIChatHistory(History):
    api = "openai_chat"
    format = OpenAIChatFormat()
    messages_key = "messages"
    tool_results_follow_as_messages = True

    def tool_name(self, tool: Mapping[str, Any]) -> str | None:
        function = tool.get("function")
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return str(function["name"])
        return super().tool_name(tool)

    def opening(self, body: Mapping[str, Any]) -> Any:
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        opening: list[Any] = []
        for message in messages:
            opening.append(self.normalize_message(message) if isinstance(message, dict) else message)
            if not (isinstance(message, dict) and message.get("role") in PINNED_ROLES):
                break
        return opening

    def normalize_message(self, message: Message) -> Any:
        """String content equals one text part; empty `annotations` / `tool_calls` equal absent ones; an assistant
        message's empty content equals null."""
        out = dict(message)
        content = out.get("content")
        if isinstance(content, str) and message.get("role") != "tool":
            out["content"] = [{"type": "text", "text": content}] if content else None
        for key in ("annotations", "tool_calls"):
            if out.get(key) == []:
                out.pop(key)
        return normalized(out)

    def is_result_message(self, message: Message) -> bool:
        return message.get("role") == "tool"
