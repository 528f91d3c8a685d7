"""When a large upstream result cannot be stored (disk full, quota, Redis down), it must not be lost.

The choice (the Higress gateway's fallback): pass the result through inline with a note saying it could not be
offloaded. Only when it is over a hard cap (`FALLBACK_MAX_CHARS`, about 25,000 tokens: past that a client is likely to
choke on it anyway) is it cut, with a marker that says exactly how much was dropped and how to get less from the tool.
"""

from __future__ import annotations

import mcp.types as types

from mcp_offload.mcp_server.content_blocks import payload_of

FALLBACK_MAX_CHARS = 100_000


def _size(block: types.ContentBlock) -> int:
    payload = payload_of(block)
    return len(payload.body) if payload is not None else 0


def _cut(block: types.ContentBlock, keep: int) -> types.ContentBlock | None:
    """The block cut to `keep` characters, or None when it cannot be cut meaningfully (media, blobs)."""
    dropped = _size(block) - keep
    marker = f"\n[mcp-offload: {dropped:,} more characters of this block not shown]"
    match block:
        case types.TextContent(text=text):
            return types.TextContent(type="text", text=text[:keep] + marker)
        case types.EmbeddedResource(resource=types.TextResourceContents() as res):
            cut = res.model_copy(update={"text": res.text[:keep] + marker})
            return types.EmbeddedResource(type="resource", resource=cut)
    return None


def inline_fallback(
    result: types.CallToolResult, reason: str, public_name: str, max_chars: int = FALLBACK_MAX_CHARS
) -> types.CallToolResult:
    """The upstream result shown inline (cut to `max_chars` if over it), headed by a note saying why."""
    total = sum(_size(block) for block in result.content)
    if total <= max_chars:
        note = (
            f"[mcp-offload] The result of {public_name} could not be stored ({reason}), so it is shown inline in full."
        )
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=note), *result.content],
            structured_content=result.structured_content,
        )
    budget = max_chars
    kept: list[types.ContentBlock] = []
    omitted = 0
    for block in result.content:
        size = _size(block)
        if size <= budget:
            kept.append(block)
            budget -= size
            continue
        cut = _cut(block, budget) if budget > 0 else None
        if cut is not None:
            kept.append(cut)
            budget = 0
        else:
            omitted += 1
    note = (
        f"[mcp-offload] The result of {public_name} could not be stored ({reason}). It is {total:,} characters, "
        f"over the {max_chars:,}-character inline cap, so it is cut: only the first {max_chars:,} are shown"
        + (f" and {omitted} media/binary block(s) were left out" if omitted else "")
        + ". Ask the tool for less (a range, a filter, a page)."
    )
    return types.CallToolResult(content=[types.TextContent(type="text", text=note), *kept])
