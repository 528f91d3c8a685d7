"""The Anthropic Messages API format: `{"role": "user" | "assistant", "content": str | [blocks]}`.

Tool calls are `tool_use` blocks (`id`, `name`) in assistant messages; their results are `tool_result` blocks
(`tool_use_id`, `content`: a string or text / image blocks) in the next user message. A user message without a
`tool_result` block opens a turn. Images are `{"type": "image", "source": {"type": "base64", …}}` blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp_offload.apis.message import (
    OFFLOADED_ARGUMENTS,
    BlocksRead,
    Message,
    MessageView,
    Part,
    ToolCallRef,
    ToolResult,
    UserTextNotes,
    bad,
    dump,
    dump_block,
    is_typed_item,
    part_types,
    require_str,
)
from mcp_offload.core.encoded_bytes import decode_base64

ROLES = ("user", "assistant")
# Anthropic adds block types often: any part type but these (the other APIs' own) is taken as one of its blocks
FOREIGN_PARTS = frozenset(
    {"refusal", "image_url", "input_audio", "file"}
    | {"input_text", "output_text", "input_image", "input_file", "summary_text", "reasoning_text"}
)
CHAT_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call"})  # a Chat Completions message's, never ours


class AnthropicFormat(UserTextNotes):
    text_part_type = "text"

    def to_dict(self, message: object, index: int) -> Message:
        msg = dump(message, index)
        content = msg.get("content")
        if isinstance(content, list) and any(not isinstance(b, dict | str) for b in content):
            msg = {**msg, "content": [dump_block(b, index) for b in content]}
        return msg

    def view(self, message: Message, index: int) -> MessageView:
        role = message.get("role")
        if role not in ROLES:
            raise bad(index, f"unknown role {role!r} for the Anthropic Messages API (user or assistant)")
        content = message.get("content")
        if isinstance(content, str):
            return MessageView(role=role, opens_turn=role == "user", lines=(content,))
        if not isinstance(content, list):
            raise bad(index, "content must be a string or a list of blocks")
        read = BlocksRead()
        for slot, block in enumerate(content):
            if not isinstance(block, dict):
                raise bad(index, f"content block {slot} must be an object")
            kind = block.get("type")
            if kind == "text":
                read.texts.append(require_str(block.get("text"), index, f"content block {slot} text"))
            elif kind == "image":
                read.images += 1
            elif kind == "tool_use" and role == "assistant":
                call_id = require_str(block.get("id"), index, f"tool_use block {slot} id")
                arguments = json.dumps(block.get("input"), ensure_ascii=False)
                read.calls.append(ToolCallRef(call_id, str(block.get("name", "")), arguments))
                read.texts.append(f"[called {block.get('name')} {block.get('input')!r}]")
            elif kind == "tool_result":
                if role != "user":
                    raise bad(index, "tool_result blocks belong in user messages")
                call_id = require_str(block.get("tool_use_id"), index, f"tool_result block {slot} tool_use_id")
                read.result(slot, call_id, self._parts(block.get("content", ""), index, slot))
        return read.view(role, user=role == "user")

    def _parts(self, content: Any, index: int, slot: int) -> tuple[Part, ...]:
        if isinstance(content, str):
            return (Part(0, text=content),)
        if not isinstance(content, list):
            raise bad(index, f"tool_result block {slot} content must be a string or a list of blocks")
        parts: list[Part] = []
        for i, block in enumerate(content):
            if not isinstance(block, dict):
                raise bad(index, f"tool_result block {slot} content {i} must be an object")
            if block.get("type") == "text":
                parts.append(Part(i, text=require_str(block.get("text"), index, f"tool_result {slot} text")))
            elif block.get("type") == "image":
                source = block.get("source")
                if isinstance(source, dict) and source.get("type") == "base64":
                    data = decode_base64(str(source.get("data", "")))
                    if data is not None:
                        parts.append(Part(i, image=data, mime_type=str(source.get("media_type") or "")))
        return tuple(parts)

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        content = list(message["content"])
        block = dict(content[result.slot])
        inner = block.get("content", "")
        if isinstance(inner, str):
            block["content"] = texts[0]
        else:
            block["content"] = [_with_text(part, texts[i]) if i in texts else part for i, part in enumerate(inner)]
        content[result.slot] = block
        return {**message, "content": content}

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        content = [
            {**b, "input": {OFFLOADED_ARGUMENTS: text}}
            if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == call_id
            else b
            for b in message["content"]
        ]
        return {**message, "content": content}

    def could_be(self, message: Mapping[str, Any]) -> bool:
        content = message.get("content")
        types = part_types(content)
        return (
            not is_typed_item(message)
            and message.get("role") in ROLES
            and content is not None
            and types is not None
            and not (CHAT_KEYS & message.keys())
            and not any(t in FOREIGN_PARTS for t in types)
        )


def _with_text(part: dict[str, Any], text: str) -> dict[str, Any]:
    """A text part with new text; its `cache_control` breakpoint (and other markers) stay, `citations` (which point
    into the old text) go."""
    return {**{k: v for k, v in part.items() if k != "citations"}, "type": "text", "text": text}
