"""Anthropic prompt caching across the transparent retrieval loop: the follow-up call ends on a cache breakpoint.

Anthropic writes the cache only up to a `cache_control` breakpoint. A client puts its last one at the end of its
request; the loop's follow-up call appends the model's retrieval call and its results after it. Without a
breakpoint there, the follow-up writes nothing for what the loop added, and the next turn (which carries that
exchange again, restored from the expansion record) pays it as a cache write. So the follow-up carries the
client's last breakpoint (the same `cache_control` value, TTL included) also on its last block; when the request
already holds the API's maximum of 4 breakpoints, the client's last one is moved there instead (the first call of
the turn has written the cache at its old place, and the follow-up reads that entry within the provider's
20-block lookback).

Only the follow-up call carries the marker. The expansion record (what later turns restore) is built without it,
as the client's own history is: `cache_control` is a marker that clients move from turn to turn, not content; the
provider's cache keys on the content, which is byte-identical in the follow-up and in the restored messages, so
the next turn reads the whole follow-up prompt from the cache. Requests with automatic caching (a top-level
`cache_control`) already cache up to their last block; requests that mark nothing in their messages do not cache
the conversation, and the gateway does not start to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

MAX_BREAKPOINTS = 4  # Anthropic's limit per request (tools, system and messages together)

Site = tuple[int, int, int | None]  # (message, block, part of a tool_result's content or None)


def with_end_breakpoint(body: dict[str, Any], appended: int) -> dict[str, Any]:
    """`body` (a follow-up whose last `appended` messages are the gateway's) with a breakpoint on its last block,
    as the module docstring says; `body` itself when there is nothing to do. Never mutates `body`."""
    messages = body.get("messages")
    if isinstance(body.get("cache_control"), dict) or not isinstance(messages, list) or appended <= 0:
        return body
    client_sites = list(_sites(messages[: len(messages) - appended]))
    if not client_sites:
        return body
    last_site, marker = client_sites[-1]
    end = messages[-1]
    content = end.get("content") if isinstance(end, dict) else None
    if not isinstance(content, list) or not content or not isinstance(content[-1], dict):
        return body
    count = len(client_sites) + _count_outside_messages(body)
    out = list(messages)
    if count >= MAX_BREAKPOINTS:
        out[last_site[0]] = _without_marker(out[last_site[0]], last_site)
    out[-1] = {**end, "content": [*content[:-1], {**content[-1], "cache_control": marker}]}
    return {**body, "messages": out}


def _sites(messages: list[Any]) -> Iterator[tuple[Site, dict[str, Any]]]:
    """Every breakpoint in `messages`, in order: (site, its cache_control value)."""
    for i, message in enumerate(messages):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            inner = block.get("content")
            if block.get("type") == "tool_result" and isinstance(inner, list):
                for k, part in enumerate(inner):
                    if isinstance(part, dict) and isinstance(part.get("cache_control"), dict):
                        yield (i, j, k), part["cache_control"]
            if isinstance(block.get("cache_control"), dict):
                yield (i, j, None), block["cache_control"]


def _count_outside_messages(body: dict[str, Any]) -> int:
    count = 0
    for key in ("tools", "system"):
        found = body.get(key)
        if isinstance(found, list):
            count += sum(1 for item in found if isinstance(item, dict) and isinstance(item.get("cache_control"), dict))
    return count


def _without_marker(message: dict[str, Any], site: Site) -> dict[str, Any]:
    _, j, k = site
    content = list(message["content"])
    block = dict(content[j])
    if k is None:
        del block["cache_control"]
    else:
        inner = list(block["content"])
        inner[k] = {key: value for key, value in inner[k].items() if key != "cache_control"}
        block["content"] = inner
    content[j] = block
    return {**message, "content": content}
