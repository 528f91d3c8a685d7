"""A stored output as a resource: the server's listing and the proxy's links agree (one home, server/resources.py)."""

from __future__ import annotations

import mcp.types as types
import pytest
from mcp import Client

from mcp_offload.core.output_uri import RESOURCE_PREFIX
from mcp_offload.core.results import OutputFacts, facts_of
from mcp_offload.core.services import Services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.resources import mime_type_of, resource_link_of, resource_of
from mcp_offload.proxy.policy import _link
from support.store import make_meta

EXPECTED = {"json": "application/json", "jsonl": "application/x-ndjson", "text": "text/plain"}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_listing_and_proxy_link_agree_on_the_mime_type(kind: str) -> None:
    meta = make_meta(b'{"a": 1}\n{"a": 2}\n', kind=kind)
    listed = resource_of(meta)
    facts = OutputFacts(**facts_of(meta))
    linked = _link(facts)  # what the proxy puts in an offloaded result
    assert listed.mime_type == linked.mime_type == mime_type_of(meta.kind) == EXPECTED[kind]
    assert str(listed.uri) == str(linked.uri) == RESOURCE_PREFIX + meta.handle
    assert listed.size == linked.size == meta.size
    assert linked.description is None  # the reply beside it says what it is (Claude Code shows both to its model)
    assert resource_link_of(facts, "d").description == "d"


async def test_a_jsonl_output_is_listed_and_read_as_ndjson(services: Services) -> None:
    async with Client(build_server(services)) as client:
        await client.call_tool("offload", {"content": "\n".join(f'{{"n": {i}}}' for i in range(500))})
        (listed,) = (await client.list_resources()).resources
        read = await client.read_resource(str(listed.uri))
    (contents,) = read.contents
    assert isinstance(contents, types.TextResourceContents)
    assert listed.mime_type == contents.mime_type == "application/x-ndjson"
