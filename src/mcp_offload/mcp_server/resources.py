"""A stored output as an MCP resource: its URI, MIME type, `Resource` listing entry, `ResourceLink`, and contents.

The one place that knows how an output looks as a resource. The server lists and reads outputs through it; the
proxy links offloaded results with it, so a link and the listing never disagree (JSON Lines is
`application/x-ndjson` in both).
"""

from __future__ import annotations

import base64

import mcp.types as types

from mcp_offload.core.output_uri import RESOURCE_PREFIX, RESOURCE_TEMPLATE, uri_of
from mcp_offload.core.results import OutputFacts
from mcp_offload.store.base import OutputMeta, Store
from mcp_offload.store.handles import validate_handle

_MIME_BY_KIND = {"json": "application/json", "jsonl": "application/x-ndjson"}

OUTPUT_TEMPLATE = types.ResourceTemplate(
    uri_template=RESOURCE_TEMPLATE,
    name="offloaded-output",
    description="A stored output of this session, whole (use the tools to read parts of it).",
)


def mime_type_of(kind: str, mime_type: str | None = None) -> str:
    """The output's own MIME type (binaries), else by kind: JSON, JSON Lines, or plain text."""
    return mime_type or _MIME_BY_KIND.get(kind, "text/plain")


def resource_of(meta: OutputMeta) -> types.Resource:
    """The entry of an output in resources/list."""
    return types.Resource(
        uri=uri_of(meta.handle),
        name=meta.name or meta.handle,
        description=f"Offloaded {meta.kind} output ({meta.size:,} bytes, {meta.tokens:,} tokens)",
        mime_type=mime_type_of(meta.kind, meta.mime_type),
        size=meta.size,
    )


def resource_link_of(facts: OutputFacts, description: str | None = None) -> types.ResourceLink:
    """A link to an output, for a tool result that stored it."""
    return types.ResourceLink(
        type="resource_link",
        uri=uri_of(facts.handle),
        name=facts.handle,
        description=description,
        mime_type=mime_type_of(facts.kind, facts.mime_type),
        size=facts.bytes,
    )


async def read_output_resource(store: Store, scope: str, uri: str) -> types.ReadResourceResult:
    """The whole output behind an `offload://outputs/<handle>` URI: text, or base64 for binaries.
    Raises `OffloadError` (bad handle, unknown, expired); the server turns it into a JSON-RPC error."""
    handle = validate_handle(uri[len(RESOURCE_PREFIX) :])
    async with store.open(scope, handle) as output:
        raw = output.read_bytes(0, output.meta.size)
        meta = output.meta
    if meta.kind == "blob":
        blob = base64.b64encode(raw).decode("ascii")
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=uri, mime_type=meta.mime_type, blob=blob)]
        )
    text = raw.decode("utf-8", "surrogatepass")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=mime_type_of(meta.kind), text=text)]
    )
