"""Anthropic prompt caching for clients that ask for none: the gateway adds the breakpoints they would want.

Anthropic caches a prompt only up to a `cache_control` breakpoint, so a client that marks nothing (a plain SDK app)
pays every turn's whole prompt at the full input price, going direct or through a gateway. When a Messages request
carries no `cache_control` anywhere (no top-level automatic caching, none on tools, system or messages), the gateway
adds at most three (Anthropic allows four per request; the transparent loop's follow-up adds one more at its end,
`stream/breakpoint.py`), each `{"type": "ephemeral"}` (5 minutes):

1. the end of the system prompt (a string system becomes one text block with the same text): tools and system,
   shared by every conversation of the app, are read from the cache even by a conversation's first request;
2. the end of the previous request's last message (the last user message before the last assistant message): the
   exact point the previous turn wrote, read whatever the number of blocks the new turn added (the provider looks
   back at most 20 blocks from a breakpoint);
3. the end of the last message: this turn's whole prompt is written for the next one.

Each goes on the last block of its message that may carry one (not a thinking block, not an empty text). Every
message whose content is a string is sent as that text in one text block (what the API makes of a string anyway),
so a message has the same bytes whether or not it carries a marker. The rule is a pure function of the request: the
same history gets the same bytes on every turn, instance and restart, and turn N+1's request is turn N's with only
the markers moved, as a client's own move (the provider's cache keys on the content, which stays byte-identical).
A client that marks anything is left exactly as it is: its breakpoints are never moved, dropped or added to. Off
with the setting `gateway_cache_breakpoints` (`MCP_OFFLOAD_GATEWAY_CACHE_BREAKPOINTS=0`).

What it costs: a written prefix is billed at 1.25x the input price once and read at 0.1x afterwards, so a
conversation pays less from its second request on; a single request that is never followed pays the write
(`bench/gateway.py` measures both against going direct).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["EPHEMERAL", "marks_anything", "with_client_breakpoints"]

EPHEMERAL: dict[str, str] = {"type": "ephemeral"}
NO_MARKER_BLOCKS = frozenset({"thinking", "redacted_thinking"})  # the API refuses cache_control on these


def marks_anything(body: Mapping[str, Any]) -> bool:
    """Whether the request sets caching anywhere: top-level `cache_control`, or on a tool, system or message block
    (a tool_result's inner blocks included)."""
    if "cache_control" in body:
        return True
    for key in ("tools", "system"):
        found = body.get(key)
        if isinstance(found, list) and any(isinstance(item, dict) and "cache_control" in item for item in found):
            return True
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if "cache_control" in block:
                return True
            inner = block.get("content")
            if isinstance(inner, list) and any(isinstance(p, dict) and "cache_control" in p for p in inner):
                return True
    return False


def with_client_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """`body` with the breakpoints of the module docstring; `body` itself when it marks anything already or has no
    place for one. Never mutates `body`."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or marks_anything(body):
        return body
    out = dict(body)
    system = _marked_system(body.get("system"))
    if system is not None:
        out["system"] = system
    marked = [_as_blocks(m) for m in messages]  # the same bytes for a message whether it carries a marker or not
    sites = {len(marked) - 1}
    answered = _last_index(marked, "assistant", before=len(marked))
    if answered is not None:
        previous = _last_index(marked, "user", before=answered)
        if previous is not None:
            sites.add(previous)
    for index in sorted(sites):
        message = _marked_message(marked[index])
        if message is not None:
            marked[index] = message
    if system is None and all(a is b for a, b in zip(marked, messages, strict=True)):
        return body
    out["messages"] = marked
    return out


def _last_index(messages: list[Any], role: str, *, before: int) -> int | None:
    for i in range(before - 1, -1, -1):
        if isinstance(messages[i], dict) and messages[i].get("role") == role:
            return i
    return None


def _markable(block: Any) -> bool:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str) or block["type"] in NO_MARKER_BLOCKS:
        return False
    return block["type"] != "text" or bool(block.get("text"))


def _marked_blocks(blocks: list[Any]) -> list[Any] | None:
    for j in range(len(blocks) - 1, -1, -1):
        if _markable(blocks[j]):
            out = list(blocks)
            out[j] = {**blocks[j], "cache_control": dict(EPHEMERAL)}
            return out
    return None


def _marked_system(system: Any) -> list[Any] | None:
    if isinstance(system, str):
        return [{"type": "text", "text": system, "cache_control": dict(EPHEMERAL)}] if system else None
    return _marked_blocks(system) if isinstance(system, list) else None


def _as_blocks(message: Any) -> Any:
    """A message whose content is a non-empty string, with that text as one text block (what the API makes of it)."""
    if isinstance(message, dict) and isinstance(message.get("content"), str) and message["content"]:
        return {**message, "content": [{"type": "text", "text": message["content"]}]}
    return message


def _marked_message(message: Any) -> dict[str, Any] | None:
    content = message.get("content") if isinstance(message, dict) else None
    blocks = _marked_blocks(content) if isinstance(content, list) else None
    return None if blocks is None else {**message, "content": blocks}
