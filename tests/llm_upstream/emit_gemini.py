"""Gemini answers: the `GenerateContentResponse` and its `streamGenerateContent?alt=sse` chunks (one text part per
chunk, each function call whole in one chunk, `usageMetadata` with the running figures in every chunk,
`finishReason` on the last), framed as the API frames them: `data: {…}` and CRLF CRLF.

The first function call part carries a `thoughtSignature` (the signer's MAC over its name and arguments), as Gemini
2.5 / 3 models do when they think; a reply with `Thinking` blocks also gets `thought: true` parts when the request
asks for them (`generationConfig.thinkingConfig.includeThoughts`). Gemini 3 models give their calls an `id`, 2.5
models none (clients then match results by name).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from llm_upstream.cache import CacheUsage
from llm_upstream.emit_anthropic import chunks
from llm_upstream.script import Reply, Text, Thinking, ToolCall
from llm_upstream.signing import Signer
from llm_upstream.validate_gemini import call_signature_text


def parts_of(
    reply: Reply, model: str, signer: Signer, mint_id: Callable[[str], str], include_thoughts: bool
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    signed = False
    for block in reply.content:
        if isinstance(block, Thinking):
            if include_thoughts:
                parts.append({"text": block.text, "thought": True})
        elif isinstance(block, Text):
            parts.append({"text": block.text})
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments}
            if block.id or model.startswith("gemini-3"):
                call = {"id": block.id or mint_id("fc_"), **call}
            part: dict[str, Any] = {"functionCall": call}
            if not signed:
                part["thoughtSignature"] = signer.sign(call_signature_text(call))
                signed = True
            parts.append(part)
    return parts


def finish_reason(reply: Reply) -> str:
    return "MAX_TOKENS" if reply.stop_reason == "max_tokens" else (reply.stop_reason or "STOP")


def usage_metadata(usage: CacheUsage, output_tokens: int) -> dict[str, Any]:
    found: dict[str, Any] = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": usage.prompt_tokens + output_tokens,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": usage.prompt_tokens}],
    }
    if usage.cache_read:
        found["cachedContentTokenCount"] = usage.cache_read
        found["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.cache_read}]
    return found


def response(
    parts: list[dict[str, Any]], reply: Reply, model: str, rid: str, usage: CacheUsage, out_tokens: int
) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"parts": parts, "role": "model"}, "finishReason": finish_reason(reply), "index": 0}
        ],
        "usageMetadata": usage_metadata(usage, out_tokens),
        "modelVersion": model,
        "responseId": rid,
    }


def stream_chunks(
    parts: list[dict[str, Any]], reply: Reply, model: str, rid: str, usage: CacheUsage, out_tokens: int
) -> Iterator[dict[str, Any]]:
    pieces: list[dict[str, Any]] = []
    for part in parts:
        if "text" in part and len(part) == 1:
            pieces.extend({"text": piece} for piece in chunks(part["text"], reply.chunk_chars) or [""])
        else:
            pieces.append(part)
    pieces = pieces or [{"text": ""}]
    running = 0
    for n, piece in enumerate(pieces):
        last = n == len(pieces) - 1
        running = out_tokens if last else min(out_tokens, running + max(out_tokens // len(pieces), 1))
        candidate: dict[str, Any] = {"content": {"parts": [piece], "role": "model"}, "index": 0}
        if last:
            candidate["finishReason"] = finish_reason(reply)
        yield {
            "candidates": [candidate],
            "usageMetadata": usage_metadata(usage, running),
            "modelVersion": model,
            "responseId": rid,
        }
