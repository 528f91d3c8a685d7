"""The offload decision's shortcut and edge cases, checked against the exact path."""

from __future__ import annotations

import base64

import mcp.types as types
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_offload.proxy.policy import measure, split_result, surely_within
from mcp_offload.tokens import load_counter

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
def test_the_shortcut_never_changes_a_decision(blocks: list, structured: object, limit: int) -> None:
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
