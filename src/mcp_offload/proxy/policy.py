"""The offload decision for an upstream tool result: pass it through unchanged, or store it and reply with a reference.

What counts is what the client would receive: the text blocks, embedded text resources, and structuredContent —
except a structuredContent that repeats the content, which is counted and stored once. Servers repeat it in a
few shapes, all recognised: the text is the structure's JSON (`JSON.stringify(x)` + `x`), the structure wraps
the text (`{"content": text}`), wraps the text's JSON (`{"entities": x}`), or wraps the content blocks
themselves (`{"content": [block]}`). Images, audio and embedded binary resources count as their base64 size / 4
(about one token per three bytes: clients charge differently for media, so size is the client-independent
measure). Counting stops once the threshold is passed (`count_upto`), so a small result costs microseconds and a
5 MB one no more than tokenizing the threshold's worth.

Under the threshold the result goes back as received (only the upstream's `_meta` is dropped, as a proxy must).
Over it, the parts are stored: the text blocks together as one output (JSON stays queryable with jq), each
embedded resource, binary and non-repeating structuredContent as its own. Parts small enough to be worth keeping
(a caption such as "Here's the image you requested:") stay inline, up to `INLINE_TOKENS` in all. The client gets
one text block with each handle, size and preview, a `resource_link` per stored output, and the inline parts.
Error results are never touched.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import mcp.types as types
import orjson

from mcp_offload.core import outputs
from mcp_offload.core.encoded_bytes import decode_base64
from mcp_offload.core.render import render_reference
from mcp_offload.core.results import OffloadOutput, OutputFacts
from mcp_offload.core.services import Services
from mcp_offload.errors import OffloadError, TooLarge
from mcp_offload.mcp_server.content_blocks import Payload, payload_of
from mcp_offload.mcp_server.resources import resource_link_of
from mcp_offload.proxy.fallback import inline_fallback
from mcp_offload.tokens import TokenCounter

log = logging.getLogger(__name__)

BASE64_CHARS_PER_TOKEN = 4
INLINE_TOKENS = 200  # at most this much of an offloaded result stays inline (never more than a quarter of the limit)
ARGS_IN_NAME_CHARS = 100


@dataclass(frozen=True, slots=True)
class ResultHandling:
    """How an upstream result was handled, for the savings stats."""

    offloaded: bool
    tokens_original: int = 0  # full size of what was stored (0 when passed through)
    tokens_estimated: bool = False
    tokens_reply: int = 0  # what the model got instead
    handles: tuple[str, ...] = ()


PASSED = ResultHandling(offloaded=False)


@dataclass(frozen=True, slots=True)
class _Part(Payload):
    """One storable piece of a result: a payload (the text blocks joined as one, a resource, a binary, or the
    structuredContent), with the blocks it came from, to keep inline if it is not stored."""

    blocks: tuple[types.ContentBlock, ...] = ()

    def tokens_upto(self, counter: TokenCounter, limit: int) -> int:
        if self.binary:
            return len(self.body) // BASE64_CHARS_PER_TOKEN
        return counter.count_upto(self.body, limit) if self.body else 0


def split_result(result: types.CallToolResult) -> list[_Part]:
    """The storable parts, in order: the text blocks (as one), resources and binaries, then structuredContent."""
    texts: list[types.TextContent] = []
    others: list[_Part] = []
    for block in result.content:
        payload = payload_of(block)
        if payload is None:
            continue  # resource links (already references) and unknown blocks stay as they are
        if isinstance(block, types.TextContent):
            texts.append(block)
        else:
            others.append(_Part(payload.kind, payload.body, payload.mime_type, payload.label, (block,)))
    parts: list[_Part] = []
    if texts:
        parts.append(_Part("text", "\n".join(b.text for b in texts), None, "text", tuple(texts)))
    parts += others
    structured = result.structured_content
    if structured is not None and not repeats_content(structured, result.content, [b.text for b in texts]):
        parts.append(_Part("structured", _json_text(structured), "application/json", "structuredContent"))
    return parts


def _json_text(value: Any) -> str:
    """Compact JSON of a structuredContent; `json` when orjson refuses it (lone surrogates, ints over 64 bits)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def repeats_content(structured: Any, content: list[types.ContentBlock], texts: list[str]) -> bool:
    """Whether structuredContent carries nothing the content blocks do not (see the module docstring)."""
    candidates = [structured]
    if isinstance(structured, dict) and len(structured) == 1:
        candidates.append(next(iter(structured.values())))
    parsed: list[Any] | None = None
    for value in candidates:
        if isinstance(value, str):
            if value in texts or value == "\n".join(texts):
                return True
            continue
        if not isinstance(value, dict | list):
            continue
        if parsed is None:
            parsed = [_json_or_none(text) for text in texts]
        if any(p is not None and p == value for p in parsed):
            return True
        if isinstance(value, list) and len(value) == len(content):
            dumped = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in content]
            if dumped == value:
                return True
    return False


def _json_or_none(text: str) -> Any:
    if text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def measure(parts: list[_Part], counter: TokenCounter, limit: int) -> int:
    """Tokens of all parts, exact up to `limit`; some value > `limit` once over it."""
    total = 0
    for part in sorted(parts, key=lambda p: not p.binary):  # binaries cost nothing to measure: first
        total += part.tokens_upto(counter, limit - total)
        if total > limit:
            break
    return total


def surely_within(result: types.CallToolResult, limit: int) -> bool:
    """Whether `measure` would find the result within `limit` tokens, decided without tokenizing (most results are
    small, and this is on every call's path). A token is at least one UTF-8 byte, so bytes bound tokens: the text
    parts' bytes (plus the newlines that join them), binaries as `measure` counts them, and structuredContent's
    JSON even when it repeats the content (it then costs nothing in `measure`, so the bound still holds)."""
    budget = limit
    for block in result.content:
        match block:
            case types.TextContent(text=text) | types.EmbeddedResource(resource=types.TextResourceContents(text=text)):
                budget -= _utf8_upper(text, budget) + 1
            case types.ImageContent(data=data) | types.AudioContent(data=data):
                budget -= len(data) // BASE64_CHARS_PER_TOKEN
            case types.EmbeddedResource(resource=types.BlobResourceContents(blob=blob)):
                budget -= len(blob) // BASE64_CHARS_PER_TOKEN
            case _:
                pass
        if budget < 0:
            return False
    if result.structured_content is not None:
        try:
            budget -= len(orjson.dumps(result.structured_content))
        except TypeError:  # lone surrogates, huge ints: let the full path deal with it
            return False
    return budget >= 0


def _utf8_upper(text: str, budget: int) -> int:
    """The UTF-8 length of `text` (surrogates as 3 bytes, as stored), or something over `budget` when it is."""
    if len(text) > budget or text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


class OffloadPolicy:
    """Decides, per result, between passing through and offloading; stores with the core `offload` functions."""

    def __init__(self, services: Services) -> None:
        self.services = services

    async def apply(
        self,
        result: types.CallToolResult,
        *,
        scope: str,
        server: str,
        tool: str,
        public_name: str,
        arguments: dict[str, Any] | None,
        threshold: int,
        always: bool = False,
        links: bool = True,
    ) -> tuple[types.CallToolResult, ResultHandling]:
        """`links`: add a resource link per stored output (off for a client that shows its model a link as text of
        its own, where the reply's handle says the same)."""
        result.meta = None
        if result.is_error:
            return result, PASSED
        if not always and surely_within(result, threshold):
            return result, PASSED
        parts = split_result(result)
        if not any(part.body for part in parts):
            return result, PASSED
        if not always and measure(parts, self.services.tokens, threshold) <= threshold:
            return result, PASSED
        try:
            source = f"proxy:{server}/{tool}"
            inline_budget = 0 if always else min(INLINE_TOKENS, threshold // 4)
            return await self._offload(
                result, parts, scope, source, public_name, arguments, threshold, inline_budget, links
            )
        except OffloadError as exc:  # store full / unavailable / over the size cap: never lose the result
            log.warning("could not offload the result of %s: %s", public_name, exc)
            reason = exc.reason if isinstance(exc, TooLarge) else str(exc)  # not the advice to split: it is not ours
            return inline_fallback(result, reason.rstrip("."), public_name), PASSED

    async def _offload(
        self,
        result: types.CallToolResult,
        parts: list[_Part],
        scope: str,
        source: str,
        public_name: str,
        arguments: dict[str, Any] | None,
        threshold: int,
        budget: int,
        links: bool,
    ) -> tuple[types.CallToolResult, ResultHandling]:
        services = self.services
        label = _label(public_name, arguments)
        inline: list[_Part] = []
        stored: list[tuple[_Part, OffloadOutput]] = []
        tokens_original = 0
        for part in parts:
            if not part.body:
                continue
            cost = part.tokens_upto(services.tokens, budget)
            if cost <= budget:
                budget -= cost
                inline.append(part)
                continue
            name = label if part.kind == "text" else f"{label} {part.label}"
            raw = decode_base64(part.body) if part.binary else None
            if raw is not None:
                offloaded = await outputs.offload_bytes(
                    services, outputs.SessionScope(scope), raw, mime_type=part.mime_type, name=name, source=source
                )
                tokens_original += len(part.body) // BASE64_CHARS_PER_TOKEN
            else:  # text, or "binary" that is not base64 after all: kept as the text it is
                offloaded = await outputs.offload(
                    services, outputs.SessionScope(scope), part.body, name=name, source=source
                )
                tokens_original += offloaded.tokens
            stored.append((part, offloaded))
        reply = _render(threshold, stored)
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=reply)]
        for part in inline:
            content += part.blocks
        if links:
            content += [_link(offloaded) for _, offloaded in stored]
        content += [block for block in result.content if isinstance(block, types.ResourceLink)]
        structured = next((result.structured_content for part in inline if part.kind == "structured"), None)
        decision = ResultHandling(
            offloaded=True,
            tokens_original=tokens_original,
            tokens_estimated=any(o.tokens_estimated for _, o in stored),
            tokens_reply=services.tokens.count(reply),
            handles=tuple(o.handle for _, o in stored),
        )
        return types.CallToolResult(content=content, structured_content=structured), decision


def _label(public_name: str, arguments: dict[str, Any] | None) -> str:
    if not arguments:
        return public_name
    args = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=str)
    if len(args) > ARGS_IN_NAME_CHARS:
        args = args[: ARGS_IN_NAME_CHARS - 1] + "…"
    return f"{public_name} {args}"


def _render(threshold: int, stored: list[tuple[_Part, OffloadOutput]]) -> str:
    # Every token here is paid on every later turn: the sizes are in the reference, and the tool, its arguments and
    # so the output's name are what the model just wrote, so none is said twice.
    head = f"[mcp-offload] This result is over the proxy's {threshold:,}-token limit: stored, not shown"
    if len(stored) == 1:
        part, offloaded = stored[0]
        what = "" if part.kind == "text" else f" ({part.label})"
        return f"{head}{what}.\n{render_reference(offloaded, named=False)}"
    lines = [f"{head}. Stored parts:"]
    lines += [f"{i}. {part.label}: {render_reference(o, named=False)}" for i, (part, o) in enumerate(stored, 1)]
    return "\n".join(lines)


def _link(offloaded: OutputFacts) -> types.ResourceLink:
    """A link to the stored output, without a description: clients show the model a link as its text ("[Resource
    link: NAME] URI (DESCRIPTION)" in Claude Code), and the reply already says what it is."""
    return resource_link_of(offloaded)
