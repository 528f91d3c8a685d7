"""Content blocks taken apart in one place: kinds, payloads, MIME types and labels for every block type."""

from __future__ import annotations

import mcp.types as types
import pytest

from mcp_offload.mcp_server.content_blocks import payload_of, text_of

TEXT = types.TextContent(type="text", text="héllo")
IMAGE = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
AUDIO = types.AudioContent(type="audio", data="AAA=", mime_type="audio/wav")
DOC = types.EmbeddedResource(
    type="resource", resource=types.TextResourceContents(uri="file:///a.txt", text="doc", mime_type="text/plain")
)
BLOB = types.EmbeddedResource(
    type="resource", resource=types.BlobResourceContents(uri="file:///b.bin", blob="AQI=", mime_type=None)
)
LINK = types.ResourceLink(type="resource_link", uri="offload://outputs/x", name="x")


@pytest.mark.parametrize(
    ("block", "expected"),
    [
        (TEXT, ("text", "héllo", None, "text", False)),
        (IMAGE, ("image", "aGk=", "image/png", "image", True)),
        (AUDIO, ("audio", "AAA=", "audio/wav", "audio", True)),
        (DOC, ("resource", "doc", "text/plain", "embedded resource file:///a.txt", False)),
        (BLOB, ("blob", "AQI=", None, "embedded resource file:///b.bin", True)),
    ],
)
def test_payload_of_every_block_type(block: types.ContentBlock, expected: tuple[object, ...]) -> None:
    payload = payload_of(block)
    assert payload is not None
    assert (payload.kind, payload.body, payload.mime_type, payload.label, payload.binary) == expected


def test_links_carry_no_payload_and_text_of_joins_only_text() -> None:
    assert payload_of(LINK) is None
    second = types.TextContent(type="text", text=" world")
    assert text_of([TEXT, IMAGE, LINK, second]) == "héllo world"
