"""The offload decision: what counts (repeated structuredContent once), early-exit measuring, small results and
errors kept byte for byte, each large part stored with a caption kept inline; the shortcut against the exact path."""

from __future__ import annotations

import base64
from typing import Any

import mcp.types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.core.services import Services
from mcp_offload.proxy.policy import OffloadPolicy, measure, repeats_content, split_result, surely_within
from mcp_offload.tokens import load_counter
from support import text_block

COUNTER = load_counter("o200k_base")
TEXT = st.text(st.sampled_from(list('ab ü€😀\n{}":,1\ud800')), max_size=400)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=20,
)
BLOCK = st.one_of(
    TEXT.map(lambda t: types.TextContent(type="text", text=t)),
    st.binary(max_size=300).map(
        lambda b: types.ImageContent(type="image", data=base64.b64encode(b).decode(), mime_type="image/png")
    ),
    TEXT.map(
        lambda t: types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///x", text=t, mime_type="text/plain")
        )
    ),
)


@settings(max_examples=300, deadline=None)
@given(blocks=st.lists(BLOCK, max_size=4), structured=st.none() | JSONISH, limit=st.integers(0, 400))
def test_the_shortcut_never_changes_a_decision(
    blocks: list[types.ContentBlock], structured: dict[str, Any] | None, limit: int
) -> None:
    result = types.CallToolResult(content=blocks, structured_content=structured)
    if surely_within(result, limit):
        assert measure(split_result(result), COUNTER, limit) <= limit


def test_structured_content_with_lone_surrogates_and_huge_ints_is_measured() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(type="text", text="x")],
        structured_content={"a": "\ud800" * 3, "b": 2**70},
    )
    parts = split_result(result)
    assert [p.kind for p in parts] == ["text", "structured"]
    assert str(2**70) in parts[-1].body and "\ud800" in parts[-1].body
    assert not surely_within(result, 10**6)  # refused by orjson: left to the exact path, which copes
    assert measure(parts, COUNTER, 10**6) > 0


def _text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


@pytest.mark.parametrize(
    ("content", "structured", "repeated"),
    [
        ([_text('{"a": 1, "b": [1, 2]}')], {"b": [1, 2], "a": 1}, True),  # JSON.stringify(x) + x
        ([_text("file body")], {"content": "file body"}, True),  # server-filesystem: {content: text}
        ([_text('[{"n": 1}]')], {"entities": [{"n": 1}]}, True),  # server-memory: {entities: x}
        ([types.ImageContent(type="image", data="AAAA", mime_type="image/png")],
         {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}, True),  # wraps the blocks
        ([_text('{"a": 1}')], {"a": 2}, False),
        ([_text("3")], {"result": 3}, False),
        ([], {"a": 1}, False),
    ],
)  # fmt: skip
def test_structured_content_repeating_the_content_counts_once(
    content: list[types.ContentBlock], structured: dict[str, Any], repeated: bool
) -> None:
    texts = [b.text for b in content if isinstance(b, types.TextContent)]
    assert repeats_content(structured, content, texts) is repeated
    parts = split_result(types.CallToolResult(content=content, structured_content=structured))
    assert any(p.kind == "structured" for p in parts) is not repeated


async def test_measure_stops_at_the_threshold(services: Services) -> None:
    big = "word " * 200_000
    parts = split_result(types.CallToolResult(content=[_text(big)]))
    assert 100 < measure(parts, services.tokens, 100) < 10_000
    small = split_result(types.CallToolResult(content=[_text("hello world")]))
    assert measure(small, services.tokens, 100) == services.tokens.count("hello world")
    image = split_result(
        types.CallToolResult(content=[types.ImageContent(type="image", data="A" * 4000, mime_type="image/png")])
    )
    assert measure(image, services.tokens, 100_000) == 1000


async def test_policy_keeps_small_results_and_errors_byte_for_byte(services: Services) -> None:
    policy = OffloadPolicy(services)
    small = types.CallToolResult(content=[_text("x" * 10)], structured_content={"k": "v"}, _meta={"up": 1})
    before = small.model_dump(by_alias=True, exclude={"meta"})
    out, decision = await policy.apply(
        small, scope="0" * 32, server="s", tool="t", public_name="s__t", arguments=None, threshold=100
    )
    assert out.model_dump(by_alias=True, exclude={"meta"}) == before and out.meta is None
    assert decision.offloaded is False
    error = types.CallToolResult(content=[_text("boom " * 10_000)], is_error=True)
    out, decision = await policy.apply(
        error, scope="0" * 32, server="s", tool="t", public_name="s__t", arguments=None, threshold=100
    )
    assert text_block(out.content[0]) == "boom " * 10_000 and out.is_error and not decision.offloaded


async def test_policy_offloads_each_part_and_keeps_a_caption(services: Services) -> None:
    policy = OffloadPolicy(services)
    png = base64.b64encode(bytes(range(256)) * 40).decode()
    result = types.CallToolResult(
        content=[
            _text("Here's the image:"),
            types.ImageContent(type="image", data=png, mime_type="image/png"),
            types.EmbeddedResource(
                type="resource",
                resource=types.TextResourceContents(
                    uri="file:///log.txt", text="log line\n" * 3000, mime_type="text/plain"
                ),
            ),
            types.ResourceLink(type="resource_link", uri="file:///other.txt", name="other"),
        ]
    )
    out, decision = await policy.apply(
        result, scope="0" * 32, server="srv", tool="pic", public_name="srv__pic", arguments={"q": 1}, threshold=500
    )
    assert decision.offloaded and len(decision.handles) == 2
    kinds = [type(b).__name__ for b in out.content]
    assert kinds == ["TextContent", "TextContent", "ResourceLink", "ResourceLink", "ResourceLink"]
    assert text_block(out.content[1]) == "Here's the image:"  # the caption stays inline, verbatim
    reply = text_block(out.content[0])
    assert "binary; 10,240 bytes, image/png" in reply and "embedded resource file:///log.txt" in reply
    links = [b for b in out.content if isinstance(b, types.ResourceLink)]
    assert [str(link.uri) for link in links][-1] == "file:///other.txt"  # the upstream's own link is kept
    blob = await services.store.meta("0" * 32, decision.handles[0])
    assert (blob.kind, blob.size, blob.mime_type, blob.source) == ("blob", 10_240, "image/png", "proxy:srv/pic")
    async with services.store.open("0" * 32, decision.handles[0]) as stored:
        assert stored.read_bytes(0, stored.meta.size) == bytes(range(256)) * 40
    log = await services.store.meta("0" * 32, decision.handles[1])
    assert log.lines == 3000 and log.name == 'srv__pic {"q":1} embedded resource file:///log.txt'
    assert decision.tokens_original > decision.tokens_reply > 0
