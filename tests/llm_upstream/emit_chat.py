"""OpenAI Chat Completions answers: the `chat.completion` object and its `chat.completion.chunk` stream (role
chunk, content deltas, tool_calls deltas by index, a finish chunk, the usage chunk when
`stream_options.include_usage`, then `data: [DONE]`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

from llm_upstream.cache import CacheUsage
from llm_upstream.emit_anthropic import chunks
from llm_upstream.script import Reply, Text, ToolCall

FINGERPRINT = "fp_llm_upstream"


def usage_of(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": usage.prompt_tokens + output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
    }  # fmt: skip


def parts_of(reply: Reply, mint_id: Callable[[str], str]) -> tuple[str | None, list[dict[str, Any]]]:
    text = "".join(b.text for b in reply.content if isinstance(b, Text))
    calls = [
        {"id": b.id or mint_id("call_"), "type": "function",
         "function": {"name": b.name, "arguments": json.dumps(b.arguments, ensure_ascii=False)}}
        for b in reply.content if isinstance(b, ToolCall)
    ]  # fmt: skip
    return (text if text or not calls else None), calls


def finish_reason(reply: Reply, calls: list[dict[str, Any]]) -> str:
    if reply.stop_reason:
        return {"max_tokens": "length", "end_turn": "stop"}.get(reply.stop_reason, reply.stop_reason)
    return "tool_calls" if calls else "stop"


def completion(
    cid: str,
    model: str,
    reply: Reply,
    text: str | None,
    calls: list[dict[str, Any]],
    usage: CacheUsage,
    out_tokens: int,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": cid,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason(reply, calls)}],
        "usage": usage_of(usage, out_tokens),
        "service_tier": "default",
        "system_fingerprint": FINGERPRINT,
    }


def stream_chunks(
    cid: str,
    model: str,
    reply: Reply,
    text: str | None,
    calls: list[dict[str, Any]],
    usage: CacheUsage,
    out_tokens: int,
    include_usage: bool,
) -> Iterator[dict[str, Any]]:
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
            "service_tier": "default", "system_fingerprint": FINGERPRINT,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }  # fmt: skip
        if include_usage:
            body["usage"] = None
        return body

    yield chunk({"role": "assistant", "content": "" if text is not None else None, "refusal": None})
    if text:
        for piece in chunks(text, reply.chunk_chars):
            yield chunk({"content": piece})
    for index, call in enumerate(calls):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in chunks(call["function"]["arguments"], reply.chunk_chars):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, finish_reason(reply, calls))
    if include_usage:
        last = chunk({})
        last["choices"] = []
        last["usage"] = usage_of(usage, out_tokens)
        yield last
