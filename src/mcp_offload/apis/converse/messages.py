"""The Amazon Bedrock Converse message format: `{"role": "user" | "assistant", "content": [blocks]}`, each block a
union with exactly one member (`{"text": …}`, `{"toolUse": …}`, `{"toolResult": …}`, `{"cachePoint": …}`,
`{"reasoningContent": …}`, `{"image": …}`, `{"document": …}`, …).

Tool calls are `toolUse` blocks (`toolUseId`, `name`, `input`) in assistant messages; their results are `toolResult`
blocks (`toolUseId`, `content`: a list of `{"text"}`, `{"json"}`, `{"image"}`, … parts, `status`) in the next user
message. A user message without a `toolResult` block opens a turn. A `json` part is read as its JSON text, so a big
structured result is offloaded like a text one (its reference is a `text` part, which a tool result may hold).
Images are `{"image": {"format": "png", "source": {"bytes": <base64>}}}`.
(API reference: https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_ContentBlock.html)
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
    bad,
    dump,
)
from mcp_offload.core.encoded_bytes import decode_base64

ROLES = ("user", "assistant")
# the members of Converse's ContentBlock union: a message whose blocks are all single-member objects of these is ours
BLOCK_KINDS = frozenset(
    {"text", "image", "document", "video", "audio", "toolUse", "toolResult", "guardContent", "cachePoint",
     "reasoningContent", "citationsContent", "searchResult", "toolAddition", "toolRemoval"}
)  # fmt: skip


def block_kind(block: Any) -> str | None:
    """The member a union block holds (`text`, `toolUse`, …); None for anything that is not a one-member object."""
    if isinstance(block, Mapping) and len(block) == 1:
        kind = next(iter(block))
        return kind if isinstance(kind, str) else None
    return None


class ConverseFormat:
    def to_dict(self, message: object, index: int) -> Message:
        return dump(message, index)

    def view(self, message: Message, index: int) -> MessageView:
        role = message.get("role")
        if role not in ROLES:
            raise bad(index, f"unknown role {role!r} for the Bedrock Converse API (user or assistant)")
        content = message.get("content")
        if not isinstance(content, list):
            raise bad(index, "content must be a list of content blocks")
        read = BlocksRead()
        for slot, block in enumerate(content):
            kind = block_kind(block)
            if kind is None:
                raise bad(index, f"content block {slot} must be an object with exactly one member")
            value = block[kind]
            if kind == "text":
                if not isinstance(value, str):
                    raise bad(index, f"content block {slot} text must be a string")
                read.texts.append(value)
            elif kind == "image":
                read.images += 1
            elif kind == "toolUse" and role == "assistant":
                if not isinstance(value, dict) or not isinstance(value.get("toolUseId"), str):
                    raise bad(index, f"toolUse block {slot} needs a toolUseId")
                arguments = json.dumps(value.get("input"), ensure_ascii=False)
                read.calls.append(ToolCallRef(value["toolUseId"], str(value.get("name", "")), arguments))
                read.texts.append(f"[called {value.get('name')} {value.get('input')!r}]")
            elif kind == "toolResult":
                if role != "user":
                    raise bad(index, "toolResult blocks belong in user messages")
                if not isinstance(value, dict) or not isinstance(value.get("toolUseId"), str):
                    raise bad(index, f"toolResult block {slot} needs a toolUseId")
                read.result(slot, value["toolUseId"], self._parts(value.get("content"), index, slot))
        return read.view(role, user=role == "user")

    def _parts(self, content: Any, index: int, slot: int) -> tuple[Part, ...]:
        if not isinstance(content, list):
            raise bad(index, f"toolResult block {slot} content must be a list")
        parts: list[Part] = []
        for i, part in enumerate(content):
            kind = block_kind(part)
            if kind == "text" and isinstance(part["text"], str):
                parts.append(Part(i, text=part["text"]))
            elif kind == "json":
                parts.append(Part(i, text=json.dumps(part["json"], ensure_ascii=False)))
            elif kind == "image" and isinstance(part["image"], dict):
                source = part["image"].get("source")
                data = decode_base64(str(source.get("bytes", ""))) if isinstance(source, dict) else None
                if data is not None:
                    parts.append(Part(i, image=data, mime_type=f"image/{part['image'].get('format', 'png')}"))
        return tuple(parts)

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        content = list(message["content"])
        value = dict(content[result.slot]["toolResult"])
        value["content"] = [{"text": texts[i]} if i in texts else p for i, p in enumerate(value.get("content") or [])]
        content[result.slot] = {"toolResult": value}
        return {**message, "content": content}

    def note_message(self, text: str) -> Message:
        return {"role": "user", "content": [{"text": text}]}

    def prepend_note(self, message: Message, text: str) -> Message:
        return {**message, "content": [{"text": text}, *(message.get("content") or [])]}

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        content = [
            {"toolUse": {**b["toolUse"], "input": {OFFLOADED_ARGUMENTS: text}}}
            if block_kind(b) == "toolUse" and b["toolUse"].get("toolUseId") == call_id
            else b
            for b in message["content"]
        ]
        return {**message, "content": content}

    def could_be(self, message: Mapping[str, Any]) -> bool:
        content = message.get("content")
        return (
            message.get("role") in ROLES
            and "type" not in message
            and isinstance(content, list)
            and bool(content)
            and all(block_kind(b) in BLOCK_KINDS for b in content)
        )
