"""The SSE parser under any chunking: the events (names, data, raw bytes) do not depend on where the upstream's
byte stream is cut, line endings LF / CRLF / CR included; an unfinished event stays pending."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.apis.sse import SseParser, encode_event, parse_event

names = st.one_of(st.none(), st.sampled_from(["message_start", "content_block_delta", "ping", "response.completed"]))
values = st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=30))
payloads = st.dictionaries(st.text(max_size=8), values, max_size=4)


def _feed(data: bytes, cuts: list[int]) -> list[tuple[str | None, str, bytes]]:
    parser = SseParser()
    events = []
    points = sorted({c % (len(data) + 1) for c in cuts})
    for start, end in zip([0, *points], [*points, len(data)], strict=True):
        events.extend(parser.feed(data[start:end]))
    assert parser.pending == b""
    return [(e.name, e.data, e.raw) for e in events]


@given(st.lists(st.tuples(names, payloads), min_size=1, max_size=6), st.lists(st.integers(0, 10_000), max_size=12),
       st.sampled_from([b"\n", b"\r\n", b"\r"]))  # fmt: skip
def test_events_do_not_depend_on_chunking(events: list[tuple[str | None, dict[str, object]]], cuts: list[int],
                                          newline: bytes) -> None:  # fmt: skip
    stream = b"".join(encode_event(data, name) for name, data in events)
    wire = stream.replace(b"\n", newline)
    whole = _feed(wire, [])
    assert _feed(wire, cuts) == whole
    assert [(n, d) for n, d, _ in whole] == [(parse_event(encode_event(p, n)).name, parse_event(
        encode_event(p, n)).data) for n, p in events]  # fmt: skip
    assert b"".join(raw for _, _, raw in whole) == stream  # raw bytes, normalized to LF, lose nothing


def test_comments_and_unfinished_events() -> None:
    parser = SseParser()
    events = parser.feed(b': keep-alive\n\nevent: ping\ndata: {}\n\ndata: {"half')
    assert [(e.name, e.data) for e in events] == [(None, ""), ("ping", "{}")]
    assert parser.pending == b'data: {"half'
    assert [e.data for e in parser.feed(b'": 1}\n\n')] == ['{"half": 1}']
