"""Answers cut to a client's cap: every answer fits, and following the continuations it ends with rebuilds the range
(a read) or the whole answer (a search, a query) exactly. Hypothesis over unicode, long lines, ranges and caps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.core import outputs
from mcp_offload.core.answer_cap import MIN_CAP_BYTES, AnswerCap, parse_cap, parse_client_caps
from mcp_offload.core.fit import fitted_read, fitted_search, fitted_text
from mcp_offload.core.render import search_blocks
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import SettingsError
from mcp_offload.settings import Settings
from support.continuations import continuation, shown_part

PIECES = st.sampled_from(["word ", "line\n", "\n", "ünï ", "😀", "x" * 300, "€\n", "\r\n", "\u2028", "tab\t"])
CAPS = st.one_of(
    st.builds(AnswerCap, max_bytes=st.integers(MIN_CAP_BYTES, 12_000)),
    st.builds(AnswerCap, max_tokens=st.integers(500, 3_000)),
    st.builds(AnswerCap, max_bytes=st.integers(MIN_CAP_BYTES, 12_000), max_tokens=st.integers(500, 3_000)),
)


@pytest.fixture
def fit_services(tmp_path: Path) -> Services:
    return build_services(Settings(store=str(tmp_path / "store"), jq_workers=1))


async def follow_reads(services: Services, scope: outputs.SessionScope, cap: AnswerCap, args: dict[str, Any]) -> str:
    """Read `args`, then every continuation the answers end with; the texts read, joined."""
    pieces: list[str] = []
    while True:
        answer, out = await fitted_read(services, scope, args.pop("handle"), cap, **args)
        assert cap.fits(answer, services.tokens), (len(answer.encode()), cap)
        assert out.text in answer
        pieces.append(out.text)
        following = continuation(answer)
        if following is None:
            assert out.next_start is None
            return "".join(pieces)
        assert len(pieces) < 500, "the continuations do not make progress"
        args = following


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    pieces=st.lists(PIECES, min_size=1, max_size=400),
    repeat=st.integers(1, 60),
    cap=CAPS,
    by_lines=st.booleans(),
    bounds=st.tuples(st.floats(0, 1), st.floats(0, 1)),
)
def test_following_a_capped_read_rebuilds_the_range(
    fit_services: Services, pieces: list[str], repeat: int, cap: AnswerCap, by_lines: bool, bounds: tuple[float, float]
) -> None:
    text = "".join(pieces) * repeat  # up to ~1 MB: many cuts

    async def run() -> None:
        scope = outputs.SessionScope.new()
        stored = await outputs.offload(fit_services, scope, text)
        lines = _lines(text)
        total = len(lines) if by_lines else len(text)
        first, last = sorted(1 + int(b * (total - 1)) for b in bounds)
        if by_lines:
            args: dict[str, Any] = {"handle": stored.handle, "start_line": first, "end_line": last}
            expected = "".join(lines[first - 1 : last])
        else:
            args = {"handle": stored.handle, "start": first, "end": last}
            expected = text[first - 1 : last]
        assert await follow_reads(fit_services, scope, cap, args) == expected

    anyio.run(run)


def _lines(text: str) -> list[str]:
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    lines=st.lists(st.lists(PIECES, max_size=40).map("".join), min_size=1, max_size=300),
    repeat=st.integers(1, 20),
    cap=CAPS,
)
def test_a_cut_answer_continues_into_the_whole_answer(
    fit_services: Services, lines: list[str], repeat: int, cap: AnswerCap
) -> None:
    """Any answer (a query's, a list): what is shown, then the reads it points to, give the whole answer back."""
    answer = "\n".join(lines * repeat)

    async def run() -> None:
        scope = outputs.SessionScope.new()
        shown = await fitted_text(fit_services, scope, answer, cap, "query answer")
        assert cap.fits(shown, fit_services.tokens)
        following = continuation(shown)
        if following is None:
            assert shown == answer
            return
        rest = await follow_reads(fit_services, scope, cap, following)
        head = shown_part(shown)
        if "start" in following:  # cut inside a line: the shown part ends with the newline before the note
            head = head.removesuffix("\n")
        assert head + rest == answer

    anyio.run(run)


async def test_a_search_shows_fewer_whole_hits_and_says_how_to_see_the_rest(fit_services: Services) -> None:
    log = "".join(f"{i:05d} INFO request served in {i % 97} ms\n" for i in range(1, 3001))
    scope = outputs.SessionScope.new()
    stored = await outputs.offload(fit_services, scope, log)
    found = await outputs.search(fit_services, scope, "INFO", handle=stored.handle, max_results=500)
    whole = "\n".join(line for block in search_blocks(found, stored.handle) for line in block)
    cap = AnswerCap(max_bytes=10_000, whose="Codex's")
    shown = await fitted_search(fit_services, scope, found, stored.handle, cap)
    assert len(shown.encode()) <= 10_000 < len(whole.encode())
    head = shown_part(shown)
    hits = [line for line in head.splitlines()[1:]]
    assert hits and all(line.endswith(" ms") for line in hits), "cut at the end of a hit"
    assert f"cut at Codex's 10,000-byte cap after {len(hits)} of 500 hits" in shown
    following = continuation(shown)
    assert following is not None
    assert head + await follow_reads(fit_services, scope, cap, following) == whole
    # asking again stores nothing new: the whole answer's handle is derived from its text
    again = await fitted_search(fit_services, scope, found, stored.handle, cap)
    assert again == shown and len((await outputs.list_outputs(fit_services, scope)).outputs) == 2


async def test_uncapped_answers_are_unchanged(fit_services: Services) -> None:
    scope = outputs.SessionScope.new()
    text = "".join(f"{i} lorem ipsum dolor sit amet\n" for i in range(20_000))
    stored = await outputs.offload(fit_services, scope, text)
    answer, out = await fitted_read(fit_services, scope, stored.handle, AnswerCap())
    assert out.tokens <= fit_services.settings.read_max_tokens and out.next_start is not None
    assert answer.endswith(
        f"[cut at the 5,000-token cap: continue with read_large_output(handle={stored.handle!r}, "
        f"start={out.next_start}, end={len(text)})]"
    )
    assert await fitted_text(fit_services, scope, text, AnswerCap(), "query answer") == text


CAP_SPECS = [
    ("codex-mcp-client=10KB", {"codex-mcp-client": AnswerCap(10_000, None, "codex-mcp-client's")}),
    ("a=25000tokens, *=9KiB", {"a": AnswerCap(None, 25_000, "a's"), "*": AnswerCap(9216, None, "this client's")}),
    ("b=48KB+25000tokens", {"b": AnswerCap(48_000, 25_000, "b's")}),
    ("", {}),
]


@pytest.mark.parametrize(("spec", "expected"), CAP_SPECS)
def test_client_caps_are_written_name_equals_size(spec: str, expected: dict[str, AnswerCap]) -> None:
    assert parse_client_caps(spec) == expected


BAD_SPECS = [
    ("codex-mcp-client=100", "below the smallest useful answer (2,000 bytes)"),
    ("x=10tokens", "below the smallest useful answer (500 tokens)"),
    ("x", "is not NAME=SIZE"),
    ("=10KB", "is not NAME=SIZE"),
    ("x=lots", "is not a size"),
    ("x=1KB+2KB", "bytes twice"),
]


@pytest.mark.parametrize(("spec", "message"), BAD_SPECS)
def test_a_bad_or_too_small_cap_is_refused(spec: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_client_caps(spec)


def test_a_cap_in_tokens_counts_tokens(fit_services: Services) -> None:
    cap = parse_cap("600tokens")
    assert cap.fits("word " * 500, fit_services.tokens) and not cap.fits("word " * 700, fit_services.tokens)
