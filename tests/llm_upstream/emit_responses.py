"""OpenAI Responses answers: the `response` object and its typed SSE events (response.created, .in_progress,
per output item: .output_item.added, .content_part.added, .output_text.delta/.done, .content_part.done,
.function_call_arguments.delta/.done, reasoning summary events, .output_item.done; then .completed with usage)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from llm_upstream.cache import CacheUsage
from llm_upstream.emit_anthropic import chunks
from llm_upstream.script import Reply, Text, Thinking, ToolCall
from llm_upstream.signing import Signer


def usage_of(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.prompt_tokens + output_tokens,
    }


def items_of(reply: Reply, signer: Signer, mint_id: Callable[[str], str], encrypted: bool) -> list[dict[str, Any]]:
    """The output items, in order; consecutive texts make one message item."""
    items: list[dict[str, Any]] = []
    for block in reply.content:
        if isinstance(block, Text):
            if items and items[-1]["type"] == "message":
                items[-1]["content"][0]["text"] += block.text
                continue
            items.append({
                "id": mint_id("msg_"), "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": block.text, "annotations": [], "logprobs": []}],
            })  # fmt: skip
        elif isinstance(block, ToolCall):
            items.append({
                "id": mint_id("fc_"), "type": "function_call", "status": "completed",
                "call_id": block.id or mint_id("call_"),
                "name": block.name, "arguments": json.dumps(block.arguments, ensure_ascii=False),
                **({"namespace": block.namespace} if block.namespace else {}),
            })  # fmt: skip
        elif isinstance(block, Thinking):
            item: dict[str, Any] = {"id": mint_id("rs_"), "type": "reasoning",
                                    "summary": [{"type": "summary_text", "text": block.text}]}  # fmt: skip
            if encrypted:
                item["encrypted_content"] = signer.seal(block.text)
            items.append(item)
    return items


def response(
    rid: str, body: dict[str, Any], items: list[dict[str, Any]], status: str, usage: dict[str, Any] | None, created: int
) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "response",
        "created_at": created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": body.get("model"),
        "output": items,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "prompt_cache_key": body.get("prompt_cache_key"),
        "reasoning": body.get("reasoning") or {"effort": None, "summary": None},
        "store": body.get("store", True),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": body.get("truncation", "disabled"),
        "usage": usage,
        "user": body.get("user"),
        "metadata": body.get("metadata") or {},
    }


def stream_events(
    rid: str, body: dict[str, Any], items: list[dict[str, Any]], reply: Reply, usage: CacheUsage, out_tokens: int
) -> Iterator[dict[str, Any]]:
    created = int(time.time())
    seq = iter(range(1 << 30))

    def event(kind: str, **fields: Any) -> dict[str, Any]:
        return {"type": kind, "sequence_number": next(seq), **fields}

    yield event("response.created", response=response(rid, body, [], "in_progress", None, created))
    yield event("response.in_progress", response=response(rid, body, [], "in_progress", None, created))
    for index, item in enumerate(items):
        kind = item["type"]
        if kind == "message":
            text = item["content"][0]["text"]
            added = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=added)
            empty = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
            yield event(
                "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=empty
            )
            for piece in chunks(text, reply.chunk_chars):
                yield event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    content_index=0,
                    delta=piece,
                    logprobs=[],
                )
            yield event(
                "response.output_text.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                text=text,
                logprobs=[],
            )
            yield event(
                "response.content_part.done",
                item_id=item["id"],
                output_index=index,
                content_index=0,
                part=item["content"][0],
            )
        elif kind == "function_call":
            yield event(
                "response.output_item.added",
                output_index=index,
                item={**item, "status": "in_progress", "arguments": ""},
            )
            for piece in chunks(item["arguments"], reply.chunk_chars):
                yield event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                name=item["name"],
                arguments=item["arguments"],
            )
        else:  # reasoning
            yield event("response.output_item.added", output_index=index, item={**item, "summary": []})
            text = item["summary"][0]["text"]
            part = {"type": "summary_text", "text": ""}
            yield event(
                "response.reasoning_summary_part.added",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                part=part,
            )
            for piece in chunks(text, reply.chunk_chars):
                yield event(
                    "response.reasoning_summary_text.delta",
                    item_id=item["id"],
                    output_index=index,
                    summary_index=0,
                    delta=piece,
                )
            yield event(
                "response.reasoning_summary_text.done",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                text=text,
            )
            yield event(
                "response.reasoning_summary_part.done",
                item_id=item["id"],
                output_index=index,
                summary_index=0,
                part=item["summary"][0],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    final = response(rid, body, items, "completed", usage_of(usage, out_tokens), created)
    yield event("response.completed", response=final)
