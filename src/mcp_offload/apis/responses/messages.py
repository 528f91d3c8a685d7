"""The OpenAI Responses API input items: messages, `function_call` and `function_call_output` items.

A message item is `{"role": …, "content": str | [parts]}` (`type: "message"` optional); a call is
`{"type": "function_call", "call_id", "name", "arguments"}`; its answer `{"type": "function_call_output", "call_id",
"output": str | [input_text / input_image parts]}`. Custom (freeform) tools are the same pair, `custom_tool_call`
(`input` instead of `arguments`) and `custom_tool_call_output`. Other item types (reasoning, web search calls, …)
are passed through untouched. SDK output items (`response.output`) are accepted and dumped.
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
    is_typed_item,
    part_types,
    require_str,
    result_line,
    with_text_parts,
)
from mcp_offload.core.encoded_bytes import decode_data_url

ROLES = ("system", "developer", "user", "assistant")
PARTS = frozenset(
    {"input_text", "output_text", "input_image", "input_file", "summary_text", "reasoning_text", "refusal"}
)
CHAT_KEYS = frozenset({"tool_calls", "tool_call_id", "function_call"})  # a Chat Completions message's, never ours


class ResponsesFormat(UserTextNotes):
    text_part_type = "input_text"

    def to_dict(self, message: object, index: int) -> Message:
        msg = dump(message, index)
        if not isinstance(message, dict) and msg.get("type") in ("function_call", "custom_tool_call"):
            keep = ("type", "call_id", "name", "arguments", "input", "id", "status")
            msg = {k: v for k, v in msg.items() if k in keep}
        return msg

    def view(self, message: Message, index: int) -> MessageView:
        kind = message.get("type")
        if kind in ("function_call", "custom_tool_call"):
            call_id = require_str(message.get("call_id"), index, f"{kind} call_id")
            name = str(message.get("name", ""))
            arguments = message.get("arguments" if kind == "function_call" else "input")
            return MessageView(
                role="assistant",
                opens_turn=False,
                calls=(ToolCallRef(call_id, name, arguments if isinstance(arguments, str) else ""),),
                lines=(f"[called {name} {arguments}]",),
            )
        if kind in ("function_call_output", "custom_tool_call_output"):
            call_id = require_str(message.get("call_id"), index, f"{kind} call_id")
            output = message.get("output")
            if isinstance(output, str):
                parts: tuple[Part, ...] = (Part(0, text=output),)
            elif isinstance(output, list):
                found: list[Part] = []
                for i, p in enumerate(output):
                    if not isinstance(p, dict):
                        raise bad(index, f"output part {i} must be an object")
                    if p.get("type") == "input_text":
                        found.append(Part(i, text=require_str(p.get("text"), index, f"output part {i} text")))
                    elif p.get("type") == "input_image" and isinstance(p.get("image_url"), str):
                        decoded = decode_data_url(p["image_url"])
                        if decoded is not None:
                            found.append(Part(i, image=decoded[0], mime_type=decoded[1]))
                parts = tuple(found)
            else:
                raise bad(index, f"{kind} output must be a string or a list of parts")
            lines = tuple(result_line(call_id, p.text) for p in parts if p.text is not None)
            images = sum(1 for p in parts if p.image is not None)
            return MessageView(
                role="tool", opens_turn=False, results=(ToolResult(0, call_id, parts),), lines=lines, images=images
            )
        if kind not in (None, "message"):
            return MessageView(role="other", opens_turn=False)  # reasoning, built-in tool calls: passed through
        role = message.get("role")
        if role not in ROLES:
            raise bad(index, f"unknown role {role!r} for Responses API input items")
        content = message.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        else:
            raise bad(index, "content must be a string or a list of parts")
        return MessageView(
            role=role if role in ("user", "assistant") else "system",
            opens_turn=role == "user",
            lines=(text,),
            pinned=role in ("system", "developer"),
        )

    def replace_parts(self, message: Message, result: ToolResult, texts: dict[int, str]) -> Message:
        return with_text_parts(message, "output", self.text_part_type, texts)

    def replace_call_arguments(self, message: Message, call_id: str, text: str) -> Message:
        if message.get("type") == "custom_tool_call":  # freeform input: the reference is the input
            return {**message, "input": text}
        return {**message, "arguments": json.dumps({OFFLOADED_ARGUMENTS: text}, ensure_ascii=False)}

    def could_be(self, message: Mapping[str, Any]) -> bool:
        role, content = message.get("role"), message.get("content")
        if is_typed_item(message):  # a call, an output, reasoning, …
            return role is None or isinstance(role, str)
        types = part_types(content)
        return (
            role in ROLES
            and content is not None
            and types is not None
            and not (CHAT_KEYS & message.keys())
            and all(t in PARTS for t in types)
        )
