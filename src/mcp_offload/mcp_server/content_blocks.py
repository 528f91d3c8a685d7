"""What an MCP content block carries: the one place that takes blocks apart (the proxy's policy and fallback, the
savings accounting), so every caller sees the same kinds, payloads and MIME types.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import mcp.types as types

PayloadKind = Literal["text", "image", "audio", "resource", "blob", "structured"]  # structured: structuredContent


@dataclass(frozen=True, slots=True)
class Payload:
    """A piece of a tool result's content: a block's text, or base64 for media and binary resources (`binary`),
    or the result's structuredContent as JSON text. The proxy's storable parts extend it."""

    kind: PayloadKind
    body: str
    mime_type: str | None
    label: str  # for a person: "text", "image", "embedded resource file:///…"

    @property
    def binary(self) -> bool:
        return self.kind in ("image", "audio", "blob")


def payload_of(block: types.ContentBlock) -> Payload | None:
    """The payload of a block, or None for blocks that carry none of their own (resource links, unknown kinds)."""
    match block:
        case types.TextContent(text=text):
            return Payload("text", text, None, "text")
        case types.ImageContent(data=data, mime_type=mime):
            return Payload("image", data, mime, "image")
        case types.AudioContent(data=data, mime_type=mime):
            return Payload("audio", data, mime, "audio")
        case types.EmbeddedResource(resource=types.TextResourceContents(uri=uri, text=text, mime_type=mime)):
            return Payload("resource", text, mime, f"embedded resource {uri}")
        case types.EmbeddedResource(resource=types.BlobResourceContents(uri=uri, blob=blob, mime_type=mime)):
            return Payload("blob", blob, mime, f"embedded resource {uri}")
    return None


def text_of(content: Iterable[types.ContentBlock]) -> str:
    """The text blocks of a result, joined: what a model reads of it."""
    return "".join(block.text for block in content if isinstance(block, types.TextContent))
