"""Anthropic Messages answers: the message object, and the SSE events that stream it (the real event sequence:
message_start, ping, content_block_start / _delta / _stop per block, message_delta with usage, message_stop)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from llm_upstream.cache import CacheUsage
from llm_upstream.script import Reply, Text, Thinking, ToolCall
from llm_upstream.signing import Signer

SseEvent = tuple[str | None, dict[str, Any]]  # (event name, data)


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def usage_of(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.uncached,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": usage.cache_write - usage.cache_write_1h,
            "ephemeral_1h_input_tokens": usage.cache_write_1h,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }


def blocks_of(
    reply: Reply, signer: Signer, mint_id: Callable[[str], str], *, omit_thinking: bool = False
) -> list[dict[str, Any]]:
    """The content blocks. With `thinking.display: "omitted"` a thinking block comes with empty text and a
    signature that seals the hidden text (as the API does: the client gets no thinking, but can send it back)."""
    out: list[dict[str, Any]] = []
    for block in reply.content:
        if isinstance(block, Text):
            out.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolCall):
            out.append(
                {"type": "tool_use", "id": block.id or mint_id("toolu_"), "name": block.name, "input": block.arguments}
            )
        elif isinstance(block, Thinking) and block.redacted:
            out.append({"type": "redacted_thinking", "data": signer.seal(block.text)})
        elif isinstance(block, Thinking) and omit_thinking:
            out.append({"type": "thinking", "thinking": "", "signature": signer.seal(block.text)})
        elif isinstance(block, Thinking):
            out.append({"type": "thinking", "thinking": block.text, "signature": signer.sign(block.text)})
    return out


def stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolCall) for b in reply.content) else "end_turn"


def message(
    msg_id: str, model: str, blocks: list[dict[str, Any]], reply: Reply, usage: CacheUsage, out_tokens: int
) -> dict[str, Any]:
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop_reason(reply),
        "stop_sequence": None,
        "usage": usage_of(usage, out_tokens),
    }


def stream_events(
    msg_id: str, model: str, blocks: list[dict[str, Any]], reply: Reply, usage: CacheUsage, out_tokens: int
) -> Iterator[SseEvent]:
    start = message(msg_id, model, [], reply, usage, 1)
    start["stop_reason"] = None
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
            for piece in chunks(block["text"], reply.chunk_chars):
                yield (
                    "content_block_delta",
                    {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}},
                )
        elif kind == "tool_use":
            head = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": head}
            for piece in chunks(json.dumps(block["input"], ensure_ascii=False), reply.chunk_chars):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": piece},
                    },
                )
        elif kind == "thinking":
            head = {"type": "thinking", "thinking": "", "signature": ""}
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": head}
            for piece in chunks(block["thinking"], reply.chunk_chars):
                yield (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "thinking_delta", "thinking": piece},
                    },
                )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "signature_delta", "signature": block["signature"]},
                },
            )
        else:  # redacted_thinking arrives whole
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    final = usage_of(usage, out_tokens)
    del final["cache_creation"], final["service_tier"]
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop_reason(reply), "stop_sequence": None}, "usage": final},
    )
    yield "message_stop", {"type": "message_stop"}
