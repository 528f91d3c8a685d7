"""The OpenAI Chat Completions format: `{"role": …, "content": …}` with `tool_calls` and `role: "tool"` messages.

An assistant message declares `tool_calls` (`id`, `function.name`); each answer is a `{"role": "tool",
"tool_call_id": …, "content": str | [text parts]}` message. `system` / `developer` messages are pinned (never moved
into a transcript); a `user` message opens a turn. SDK objects (`ChatCompletionMessage`) are accepted and dumped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.message import (
    OFFLOADED_ARGUMENTS,
    Message,
    MessageView,
    Part,
    ToolCallRef,
    ToolResult,
    UserTextNotes,
    bad,
    dump,
    part_types,
    require_str,
    result_line,
    with_text_parts,
)

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
ONLY_ROLES = frozenset({"tool", "function"})  # roles no other API has
ONLY_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call"})  # keys no other API's message has
PARTS = frozenset({"text", "refusal", "image_url", "input_audio", "file"})


def _text_of(content: object, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or p.get("refusal") or "") for p in content if isinstance(p, dict))
    raise bad(index, "content must be a string, a list of parts or null")


class OpenAIChatFormat(UserTextNotes):
    text_part_type = "text"

    def to_dict(self, message: object, index: int) -> Message:
        msg = dump(message, index)
        if not isinstance(message, dict):  # an SDK response message: keep only what a request accepts
            msg = {k: v for k, v in msg.items() if k in ("role", "content", "tool_calls", "name", "refusal")}
            if msg.get("role") == "assistant" and msg.get("content") is None and "tool_calls" not in msg:
                msg["content"] = ""
        return msg

    def view(self, message: Message, index: int) -> MessageView:
        role = message.get("role")
        if role not in ROLES:
            raise bad(index, f"unknown role {role!r} for OpenAI Chat Completions")
        content = message.get("content")
        if content is None and role in ("system", "developer", "user"):
            raise bad(index, f'a {role} message needs "content" (a string or a list of parts)')
        if content is None and role == "assistant" and not message.get("tool_calls") and not message.get("refusal"):
            raise bad(index, 'an assistant message needs "content" or "tool_calls"')
        if role == "tool":
            call_id = require_str(message.get("tool_call_id"), index, "tool message tool_call_id")
            if isinstance(content, str):
                parts: tuple[Part, ...] = (Part(0, text=content),)
            elif isinstance(content, list):
                parts = tuple(
                    Part(i, text=require_str(p.get("text"), index, f"content part {i} text"))
                    for i, p in enumerate(content)
                    if isinstance(p, dict) and p.get("type") == "text"
                )
            else:
                raise bad(index, "a tool message's content must be a string or a list of text parts")
            lines = tuple(result_line(call_id, str(p.text)) for p in parts)
            return MessageView(role="tool", opens_turn=False, results=(ToolResult(0, call_id, parts),), lines=lines)
        text = _text_of(content, index)
        calls: list[ToolCallRef] = []
        if role == "assistant":
            tool_calls = message.get("tool_calls") or []
            if not isinstance(tool_calls, list):
                raise bad(index, "tool_calls must be a list")
            for i, call in enumerate(tool_calls):
                if not isinstance(call, dict):
                    raise bad(index, f"tool_calls[{i}] must be an object")
                raw_function = call.get("function")
                function: dict[str, object] = raw_function if isinstance(raw_function, dict) else {}
                calls.append(
                    ToolCallRef(
                        require_str(call.get("id"), index, f"tool_calls[{i}].id"),
                        str(function.get("name", "")),
                        str(function.get("arguments") or ""),
                    )
                )
                text += f"\n[called {function.get('name')} {function.get('arguments')}]"
        images = (
            sum(1 for p in content if isinstance(p, dict) and p.get("type") == "image_url")
            if isinstance(content, list)
            else 0
        )
        return MessageView(
            role=role if role in ("user", "assistant") else ("system" if role in ("system", "developer") else "other"),
            opens_turn=role == "user",
            calls=tuple(calls),
            lines=(text,),
            pinned=role in ("system", "developer"),
            images=images,
        )

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        return with_text_parts(message, "content", self.text_part_type, texts)

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        arguments = json.dumps({OFFLOADED_ARGUMENTS: text}, ensure_ascii=False)
        calls = [
            {**c, "function": {**c["function"], "arguments": arguments}} if c.get("id") == call_id else c
            for c in message["tool_calls"]
        ]
        return {**message, "tool_calls": calls}

    def could_be(self, message: Mapping[str, Any]) -> bool:
        role, content = message.get("role"), message.get("content")
        types = part_types(content)
        return (
            message.get("type") is None
            and role in ROLES
            and types is not None
            and all(t in PARTS for t in types)
            and (role in ONLY_ROLES or content is not None or bool(ONLY_KEYS & message.keys()))
        )
