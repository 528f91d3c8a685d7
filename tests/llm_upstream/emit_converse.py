"""Bedrock Converse answers: the `ConverseResponse` and the `ConverseStream` events (messageStart; per block the
deltas, a `contentBlockStart` first for tool use only, `contentBlockStop`; messageStop; metadata with the usage), as
`(event type, payload)` pairs for aws_frames.

Usage as Converse reports it: `inputTokens` are the tokens neither read from nor written to the cache,
`cacheReadInputTokens` / `cacheWriteInputTokens` apart, `totalTokens` everything.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from llm_upstream.cache import CacheUsage
from llm_upstream.emit_anthropic import chunks
from llm_upstream.script import Reply, Text, Thinking, ToolCall
from llm_upstream.signing import Signer
from llm_upstream.validate_converse import reasoning_signature_text

Event = tuple[str, dict[str, Any]]


def usage_of(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    return {
        "inputTokens": usage.uncached,
        "outputTokens": output_tokens,
        "totalTokens": usage.prompt_tokens + output_tokens,
        "cacheReadInputTokens": usage.cache_read,
        "cacheWriteInputTokens": usage.cache_write,
    }


def blocks_of(reply: Reply, signer: Signer, mint_id: Callable[[str], str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in reply.content:
        if isinstance(block, Text):
            out.append({"text": block.text})
        elif isinstance(block, ToolCall):
            out.append({"toolUse": {"toolUseId": block.id or mint_id("tooluse_"), "name": block.name,
                                    "input": block.arguments}})  # fmt: skip
        elif isinstance(block, Thinking) and block.redacted:
            out.append({"reasoningContent": {"redactedContent": signer.seal(block.text)}})
        elif isinstance(block, Thinking):
            signature = signer.sign(reasoning_signature_text(block.text))
            out.append({"reasoningContent": {"reasoningText": {"text": block.text, "signature": signature}}})
    return out


def stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolCall) for b in reply.content) else "end_turn"


def response(blocks: list[dict[str, Any]], reply: Reply, usage: CacheUsage, out_tokens: int) -> dict[str, Any]:
    return {
        "output": {"message": {"role": "assistant", "content": blocks}},
        "stopReason": stop_reason(reply),
        "usage": usage_of(usage, out_tokens),
        "metrics": {"latencyMs": 42},
    }


def stream_events(blocks: list[dict[str, Any]], reply: Reply, usage: CacheUsage, out_tokens: int) -> Iterator[Event]:
    yield "messageStart", {"role": "assistant"}
    for index, block in enumerate(blocks):
        if "text" in block:
            for piece in chunks(block["text"], reply.chunk_chars):
                yield "contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": piece}}
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            yield "contentBlockStart", {"contentBlockIndex": index, "start": start}
            for piece in chunks(json.dumps(use["input"], ensure_ascii=False), reply.chunk_chars):
                yield "contentBlockDelta", {"contentBlockIndex": index, "delta": {"toolUse": {"input": piece}}}
        else:
            reasoning = block["reasoningContent"]
            if "redactedContent" in reasoning:
                delta = {"reasoningContent": {"redactedContent": reasoning["redactedContent"]}}
                yield "contentBlockDelta", {"contentBlockIndex": index, "delta": delta}
            else:
                for piece in chunks(reasoning["reasoningText"]["text"], reply.chunk_chars):
                    delta = {"reasoningContent": {"text": piece}}
                    yield "contentBlockDelta", {"contentBlockIndex": index, "delta": delta}
                signature = {"reasoningContent": {"signature": reasoning["reasoningText"]["signature"]}}
                yield "contentBlockDelta", {"contentBlockIndex": index, "delta": signature}
        yield "contentBlockStop", {"contentBlockIndex": index}
    yield "messageStop", {"stopReason": stop_reason(reply)}
    yield "metadata", {"usage": usage_of(usage, out_tokens), "metrics": {"latencyMs": 42}}
