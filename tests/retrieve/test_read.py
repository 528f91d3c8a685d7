"""Exactness of read_range: every slice equals the original substring (hypothesis over unicode + ranges)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.errors import RangeError
from mcp_offload.retrieve.read import read_range
from mcp_offload.store.base import OutputMeta, StoredOutput
from mcp_offload.store.content_index import BLOCK, ContentIndex
from mcp_offload.tokens import load_counter

COUNTER = load_counter("o200k_base")
ALPHABET = st.sampled_from(list("ab \n\r\té€😀\u0301\ud800x\n"))


def stored(text: str) -> StoredOutput:
    data = text.encode("utf-8", "surrogatepass")
    index = ContentIndex.build(data)
    meta = OutputMeta(
        handle="out_" + "a" * 26,
        kind="text",
        size=len(data),
        chars=index.chars,
        lines=index.lines,
        tokens=0,
        tokens_estimated=False,
        created=0.0,
    )
    return StoredOutput(meta=meta, index=index, data=data)


def lines_of(text: str) -> list[str]:
    return text.splitlines(keepends=True) if "\r" not in text else _split_nl(text)


def _split_nl(text: str) -> list[str]:
    parts = text.split("\n")
    out = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        out.append(parts[-1])
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.text(ALPHABET, min_size=1, max_size=3000), data=st.data())
def test_char_ranges_are_exact(text: str, data: st.DataObject) -> None:
    out = stored(text)
    start = data.draw(st.integers(1, len(text)))
    end = data.draw(st.integers(start, len(text)))
    r = read_range(out, start=start, end=end, max_tokens=100_000, counter=COUNTER)
    assert r.text == text[start - 1 : end]
    assert (r.start, r.end, r.total, r.truncated) == (start, end, len(text), False)


@settings(max_examples=200, deadline=None)
@given(text=st.text(ALPHABET, min_size=1, max_size=3000), data=st.data())
def test_line_ranges_are_exact(text: str, data: st.DataObject) -> None:
    lines = _split_nl(text)
    out = stored(text)
    assert out.index.lines == len(lines)
    first = data.draw(st.integers(1, len(lines)))
    last = data.draw(st.integers(first, len(lines)))
    r = read_range(out, start_line=first, end_line=last, max_tokens=100_000, counter=COUNTER)
    assert r.text == "".join(lines[first - 1 : last])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), cap=st.integers(5, 400))
def test_capped_reads_reassemble_exactly(seed: int, cap: int) -> None:
    import random

    rng = random.Random(seed)
    text = "".join(rng.choice(["word ", "😀", "\n", "ünï ", "x" * 40, "\ud800"]) for _ in range(rng.randint(1, 2000)))
    out = stored(text)
    pieces: list[str] = []
    start: int | None = 1
    while start is not None:
        r = read_range(out, start=start, max_tokens=cap, counter=COUNTER)
        assert r.tokens <= cap
        assert r.text, "a read must make progress"
        pieces.append(r.text)
        start = r.next_start
    assert "".join(pieces) == text


def test_large_output_spanning_many_blocks() -> None:
    text = "".join(f"{i:07d} ü line with € and 😀\n" for i in range(20 * BLOCK // 30))
    out = stored(text)
    lines = text.splitlines(keepends=True)
    for n in (1, 2, 517, len(lines) // 2, len(lines) - 1, len(lines)):
        r = read_range(out, start_line=n, end_line=n, max_tokens=1000, counter=COUNTER)
        assert r.text == lines[n - 1]
    mid = len(text) // 2
    assert (
        read_range(out, start=mid, end=mid + 4095, max_tokens=10_000, counter=COUNTER).text
        == text[mid - 1 : mid + 4095]
    )


def test_end_past_total_is_clamped_with_a_note() -> None:
    out = stored("abc\ndef\n")
    r = read_range(out, start=2, end=100, max_tokens=100, counter=COUNTER)
    assert r.text == "bc\ndef\n" and r.note and "past the end" in r.note


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(start=0),
        dict(start=9),
        dict(start=3, end=2),
        dict(start_line=3),
        dict(start=1, end_line=1),
        dict(start_line=2, end_line=1),
        dict(start_line=-1),
    ],
)
def test_bad_ranges(kwargs: dict[str, int]) -> None:
    with pytest.raises(RangeError):
        read_range(stored("abc\ndef\n"), max_tokens=100, counter=COUNTER, **kwargs)
