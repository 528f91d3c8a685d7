"""Bedrock prompt caching across the transparent retrieval loop: the follow-up call ends on a `cachePoint`.

Bedrock caches Claude only up to a checkpoint (a `cachePoint` block in Converse; the Bedrock user guide, "Prompt
caching for faster model inference", https://docs.aws.amazon.com/bedrock/latest/userguide/prompt-caching.html), at
most 4 per request, reading back up to 20 blocks before one. The rule is Anthropic's (`apis/anthropic/breakpoint.py`):
when the client marks its messages, the loop's follow-up carries a checkpoint (the client's last one, TTL included)
after what the loop appended, so the next turn reads that exchange from the cache; with 4 already, the client's last
message checkpoint moves there. Only the follow-up carries it; the expansion record is built without it.
"""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.converse.messages import block_kind

MAX_CACHE_POINTS = 4


def with_end_cache_point(body: dict[str, Any], appended: int) -> dict[str, Any]:
    """`body` (a follow-up whose last `appended` messages are the gateway's) ending on a `cachePoint` as the module
    docstring says; `body` itself when there is nothing to do. Never mutates `body`."""
    messages = body.get("messages")
    if not isinstance(messages, list) or appended <= 0:
        return body
    sites = [
        (i, j, block["cachePoint"])
        for i, message in enumerate(messages[: len(messages) - appended])
        for j, block in enumerate(message.get("content") or [] if isinstance(message, dict) else [])
        if block_kind(block) == "cachePoint"
    ]
    if not sites:
        return body
    end = messages[-1]
    if not isinstance(end, dict) or not isinstance(end.get("content"), list):
        return body
    outside = sum(1 for b in body.get("system") or [] if block_kind(b) == "cachePoint")
    outside += sum(1 for t in (body.get("toolConfig") or {}).get("tools") or [] if block_kind(t) == "cachePoint")
    out = list(messages)
    last_i, last_j, marker = sites[-1]
    if len(sites) + outside >= MAX_CACHE_POINTS:
        moved = out[last_i]
        out[last_i] = {**moved, "content": [b for j, b in enumerate(moved["content"]) if j != last_j]}
    out[-1] = {**end, "content": [*end["content"], {"cachePoint": marker}]}
    return {**body, "messages": out}
