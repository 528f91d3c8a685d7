"""Search inside stored outputs: exact positions (property-tested against Python's `re`), unicode case folding,
context, line cutting, caps and lower-bound counts, unsupported constructs, linear time, multi-output merge."""

from __future__ import annotations

import mmap
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.errors import SearchError
from mcp_offload.retrieve import scan as scan_module
from mcp_offload.retrieve.pattern import CompiledPattern, compile_pattern
from mcp_offload.retrieve.search import SearchOptions, search_output, search_outputs
from mcp_offload.store import content_index as index_module
from mcp_offload.store.base import Kind, OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex

HANDLE_A = "out_" + "a" * 26
HANDLE_B = "out_" + "b" * 26
HANDLE_C = "out_" + "c" * 26


def stored(text: str, handle: str = HANDLE_A, kind: Kind = "text") -> StoredOutput:
    data = text.encode("utf-8", "surrogatepass")
    index = ContentIndex.build(data)
    meta = OutputMeta(handle, kind, len(data), index.chars, index.lines, 0, True, 0.0)
    return StoredOutput(meta, index, data)


def regex(pattern: str, *, case_sensitive: bool = True) -> CompiledPattern:
    return compile_pattern(pattern, literal=False, case_sensitive=case_sensitive)


def literal(pattern: str, *, case_sensitive: bool = True) -> CompiledPattern:
    return compile_pattern(pattern, literal=True, case_sensitive=case_sensitive)


ALL = SearchOptions(max_results=500, max_total_count=10**9)


def spans(text: str, pattern: CompiledPattern, options: SearchOptions = ALL) -> list[tuple[int, int, int]]:
    result = search_output(stored(text), pattern, options)
    assert result.total_is_exact
    assert result.total_matches == len(result.matches)
    return [(m.line, m.start, m.end) for m in result.matches]


_ASCII_W = "[A-Za-z0-9_]"
_ASCII_CLASSES = {
    "\\d": "[0-9]",
    "\\s": "[ \\t\\n\\r\\f\\v]",
    "\\b": f"(?:(?<={_ASCII_W})(?!{_ASCII_W})|(?<!{_ASCII_W})(?={_ASCII_W}))",
}


def ascii_classes(pattern: str) -> str:
    """Spell RE2's ASCII-only \\d \\s \\b out for Python's re, which would make them Unicode-aware."""
    for short, spelled in _ASCII_CLASSES.items():
        pattern = pattern.replace(short, spelled)
    return pattern


def expected(text: str, python_pattern: str, flags: int = 0) -> list[tuple[int, int, int]]:
    return [
        (text.count("\n", 0, m.start()) + 1, m.start() + 1, m.end())
        for m in re.finditer(python_pattern, text, flags)
        if m.end() > m.start()
    ]


# -- exact positions --------------------------------------------------------------------------------------------

# "\u212a" (KELVIN SIGN) and "ſ" fold to the one-byte "k" and "s": case-insensitive matches of other byte lengths.
PIECES = st.sampled_from(
    ["a", "b", "é", "É", "😀", "中", "\n", "\r\n", "\n\n", " ", "ab", "x", "k", "\u212a", "ſ", "_1"]
)
TEXTS = st.lists(st.one_of(PIECES, st.characters(codec="utf-8")), max_size=120).map("".join)
NEEDLE_PIECES = st.sampled_from(["a", "b", "é", "😀", "\n", "\r", "中", " ", "K", "s", "_", "1"])
NEEDLES = st.lists(NEEDLE_PIECES, min_size=1, max_size=3).map("".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=TEXTS, needle=NEEDLES)
def test_literal_positions_match_python(text: str, needle: str) -> None:
    result = search_output(stored(text), literal(needle), ALL)
    got = [(m.line, m.start, m.end) for m in result.matches]
    assert got == expected(text, re.escape(needle))
    for m in result.matches:
        assert text[m.start - 1 : m.end] == needle
        assert m.line == text[: m.start - 1].count("\n") + 1
        assert m.handle == HANDLE_A


# Mostly filler, so that many windows hold no match and the scan must restart with overlap.
SPARSE_PIECES = st.sampled_from(["x", "xx", "xxx", "xxxx", "a", "b", "é", "\n", "😀", " ", "ab", "\u212a_", "s1"])
SPARSE = st.lists(SPARSE_PIECES, max_size=80).map("".join)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    text=st.one_of(SPARSE, TEXTS),
    pattern=st.sampled_from(["^a", "b$", "[ab]{1,3}", "é\\n?a", "a\\s+b", "😀+", "x\\b", "\\Bb"]),
)
def test_small_windows_find_the_same_matches(monkeypatch: pytest.MonkeyPatch, text: str, pattern: str) -> None:
    """Force many tiny scan windows so matches straddle window edges; results must not change."""
    monkeypatch.setattr(scan_module, "WINDOW", 7)
    monkeypatch.setattr(scan_module, "OVERLAP", 5)
    assert spans(text, regex(pattern)) == expected(text, pattern, re.MULTILINE | re.ASCII)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=st.one_of(SPARSE, TEXTS), needle=NEEDLES, block=st.sampled_from([1, 2, 3, 5, 8]))
def test_positions_from_index_checkpoints(monkeypatch: pytest.MonkeyPatch, text: str, needle: str, block: int) -> None:
    """Tiny index blocks: positions are counted from the nearer of the previous match and the checkpoint before
    each match, and must not depend on which one was used; the shown lines neither."""
    monkeypatch.setattr(index_module, "BLOCK", block)
    result = search_output(stored(text), literal(needle), SearchOptions(max_results=500, context_lines=1))
    assert [(m.line, m.start, m.end) for m in result.matches] == expected(text, re.escape(needle))
    lines = text.split("\n")
    count = len(lines) - (text.endswith("\n") or not text)  # a final "\n" ends the last line, opens none
    for m in result.matches:
        assert m.text == lines[m.line - 1].removesuffix("\r")
        assert m.before == (((m.line - 1, lines[m.line - 2].removesuffix("\r")),) if m.line > 1 else ())
        assert m.after == (((m.line + 1, lines[m.line].removesuffix("\r")),) if m.line < count else ())


def force_skip(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every scan use the rare-byte skip, whatever the text size and byte frequencies."""
    monkeypatch.setattr(scan_module, "SKIP_MIN_BYTES", 0)
    monkeypatch.setattr(scan_module, "worth_skipping", lambda rare, first, case_sensitive: True)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(text=st.one_of(SPARSE, TEXTS), needle=NEEDLES, case_sensitive=st.booleans())
def test_skip_ahead_finds_the_same_literal_matches(
    monkeypatch: pytest.MonkeyPatch, text: str, needle: str, case_sensitive: bool
) -> None:
    force_skip(monkeypatch)
    monkeypatch.setattr(scan_module, "WINDOW", 7)
    monkeypatch.setattr(scan_module, "OVERLAP", 5)
    flags = 0 if case_sensitive else re.IGNORECASE
    assert spans(text, literal(needle, case_sensitive=case_sensitive)) == expected(text, re.escape(needle), flags)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    text=st.one_of(SPARSE, TEXTS),
    pattern=st.sampled_from(["^ab", "a b+", "é\\n", "x😀?", "b a\\b", "\\ a", " a\\s*é", "xa\\d"]),
    case_sensitive=st.booleans(),
)
def test_skip_ahead_finds_the_same_regex_matches(
    monkeypatch: pytest.MonkeyPatch, text: str, pattern: str, case_sensitive: bool
) -> None:
    force_skip(monkeypatch)
    monkeypatch.setattr(scan_module, "WINDOW", 7)
    monkeypatch.setattr(scan_module, "OVERLAP", 5)
    # The oracle: Python's re with Unicode case folding (as RE2 does) but RE2's ASCII-only \\d \\s \\b.
    flags = re.MULTILINE | (0 if case_sensitive else re.IGNORECASE)
    assert spans(text, regex(pattern, case_sensitive=case_sensitive)) == expected(text, ascii_classes(pattern), flags)


def test_skip_ahead_edges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rare part of the lead straddling the skip window's end, and case variants of other byte lengths."""
    force_skip(monkeypatch)
    text = "x ſſ1 ss1 \u212a\u212a_ kk_ \u212ak_"
    for needle in ["SS1", "kk_", "Kk_"]:
        got = spans(text, literal(needle, case_sensitive=False))
        assert got == expected(text, needle, re.IGNORECASE) and len(got) >= 2, needle
    monkeypatch.setattr(scan_module, "WINDOW", 7)
    monkeypatch.setattr(scan_module, "OVERLAP", 5)
    for pad in range(40):
        text = "aaa é " * 4 + "x" * pad + "aé_1 aé_1" + "x" * pad
        assert spans(text, literal("aé_1")) == expected(text, "aé_1"), pad
        assert spans(text, literal("AÉ_1", case_sensitive=False)) == expected(text, "aé_1"), pad


def test_leading_literal_is_read_conservatively() -> None:
    cases = {
        "abc": "abc",
        "ab+c": "ab",
        "ab*c": "a",
        "abc?": "ab",
        "a{2}b": "a",  # read by the parser: the first repetition starts with "a"
        "(?s)ab.c": "ab",
        "n=123\\d\\b": "n=123",
        "\\.foo\\(x": ".foo(x",
        "^foo bar": "foo bar",
        "foo|bar": "",
        "(?i)abc": "",
        "x.y": "x",
        "\\Qab\\E": "",
        "ab]c": "ab",
    }
    assert {p: compile_pattern(p, literal=False, case_sensitive=True).lead for p in cases} == cases
    assert literal("a.b*").lead == "a.b*"


def test_skip_ahead_on_a_large_text() -> None:
    """Real thresholds: the lead's first byte is common in the text but it holds a rare one."""
    filler = "".join(f"ok n={n} lorem ipsum dolor sit amet consectetur\n" for n in range(20_000))
    text = filler + "ok n=999999 end\nok Needle_X\n" + "ok n=5 x\n" * 10
    output = stored(text)
    pattern = regex("ok n=99999\\d\\b")
    assert scan_module.plan_skip(bytes(output.read_bytes(0, output.index.size)), pattern) is not None
    result = search_output(output, pattern, ALL)
    assert [(m.line, m.text) for m in result.matches] == [(20_001, "ok n=999999 end")]
    insensitive = literal("NEEDLE_x", case_sensitive=False)
    assert scan_module.plan_skip(bytes(output.read_bytes(0, output.index.size)), insensitive) is not None
    assert [(m.line, m.start) for m in search_output(output, insensitive, ALL).matches] == [
        (20_002, len(filler) + len("ok n=999999 end\nok ") + 1)
    ]


def test_every_window_edge_offset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "WINDOW", 7)
    monkeypatch.setattr(scan_module, "OVERLAP", 5)
    for pad in range(16):
        for piece, pattern in [("é\na", "é\\n?a"), ("a  b", "a\\s+b"), ("😀😀", "😀+"), ("ab", "ab")]:
            text = "x" * pad + piece + "x" * 9 + piece
            assert spans(text, regex(pattern)) == expected(text, pattern, re.MULTILINE), (pad, piece)


def test_positions_in_a_large_text_use_the_index() -> None:
    """Gaps bigger than the walk limit go through ContentIndex; positions stay exact."""
    text = ("é" * 70_000 + "\n") * 3 + "😀needle\n" + "x" * 200_000 + "needle"
    got = spans(text, literal("needle"))
    assert got == expected(text, "needle")
    assert [line for line, _, _ in got] == [4, 5]


def test_mmap_data_is_searched_in_place(tmp_path: Path) -> None:
    text = "alpha\nbéta needle\n" * 1000
    path = tmp_path / "data"
    path.write_bytes(text.encode())
    with path.open("rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as view:
        base = stored(text)
        output = StoredOutput(base.meta, base.index, view)
        result = search_output(output, literal("needle"), SearchOptions(max_results=5, context_lines=1))
        first = result.matches[0]
        assert (first.line, first.start, first.end) == (2, 12, 17)
        assert first.before == ((1, "alpha"),)
        assert result.total_matches == 1000


def test_surrogates_in_stored_text_are_counted_and_shown_safely() -> None:
    text = "a\ud800b needle"
    result = search_output(stored(text), literal("needle"), ALL)
    match = result.matches[0]
    assert text[match.start - 1 : match.end] == "needle"
    assert match.text == "a\ufffdb needle"


def test_dot_stops_at_newline_and_anchors_are_per_line() -> None:
    text = "foo bar\nbaz foo\nfoo"
    assert spans(text, regex("foo.*")) == [(1, 1, 7), (2, 13, 15), (3, 17, 19)]
    assert spans(text, regex("^foo")) == [(1, 1, 3), (3, 17, 19)]
    assert spans(text, regex("foo$")) == [(2, 13, 15), (3, 17, 19)]
    # A match may span lines when the pattern says so; it is reported on the line where it starts.
    assert spans(text, regex(r"bar\s+baz")) == [(1, 5, 11)]


# -- case folding, context, cutting ----------------------------------------------------------------------------


def test_case_insensitive_is_unicode_aware() -> None:
    text = "café\nCAFÉ\nÉcole\nstraße"
    assert [m[0] for m in spans(text, literal("É", case_sensitive=False))] == [1, 2, 3]
    assert [m[0] for m in spans(text, regex("é", case_sensitive=False))] == [1, 2, 3]
    assert spans(text, literal("CAFÉ", case_sensitive=False)) == [(1, 1, 4), (2, 6, 9)]
    assert spans(text, literal("CAFÉ", case_sensitive=True)) == [(2, 6, 9)]
    assert spans(text, regex("(?i)STRASSE|STRAßE")) == [(4, 17, 22)]


def test_context_lines_have_the_right_numbers() -> None:
    text = "\n".join(f"line {n}" for n in range(1, 21)) + "\n"
    result = search_output(stored(text), literal("line 10"), SearchOptions(context_lines=3))
    (match,) = result.matches
    assert match.line == 10
    assert match.text == "line 10"
    assert match.before == ((7, "line 7"), (8, "line 8"), (9, "line 9"))
    assert match.after == ((11, "line 11"), (12, "line 12"), (13, "line 13"))
    edge = search_output(stored(text), regex("line (1|20)$"), SearchOptions(context_lines=2)).matches
    assert [(m.line, m.before, m.after) for m in edge] == [
        (1, (), ((2, "line 2"), (3, "line 3"))),
        (20, ((18, "line 18"), (19, "line 19")), ()),
    ]


def test_crlf_lines_are_shown_without_the_carriage_return() -> None:
    result = search_output(stored("one\r\ntwo\r\nthree\r\n"), literal("two"), SearchOptions(context_lines=1))
    (match,) = result.matches
    assert (match.text, match.before, match.after) == ("two", ((1, "one"),), ((3, "three"),))


def test_long_line_is_cut_around_the_match_with_counts() -> None:
    line = "é" * 5_000 + "NEEDLE" + "z" * 4_994  # 10_000 characters
    text = "before\n" + line + "\nafter " + "q" * 10_000
    result = search_output(stored(text), literal("needle", case_sensitive=False), SearchOptions(context_lines=1))
    (match,) = result.matches
    assert text[match.start - 1 : match.end] == "NEEDLE"
    head, _, rest = match.text.partition("]…")
    body, _, tail = rest.partition("…[")
    assert head == "[4,853 chars cut"
    assert tail == "4,847 chars cut]"
    assert len(body) == 300 and "NEEDLE" in body
    assert body.index("NEEDLE") == 147  # centred
    assert 4_853 + len(body) + 4_847 == 10_000
    assert match.after == ((3, "after " + "q" * 294 + "…[9,706 chars cut]"),)


def test_a_match_longer_than_the_window_shows_its_beginning() -> None:
    text = "ab " + "x" * 1_000 + " cd"
    (match,) = search_output(stored(text), regex("x+"), SearchOptions(line_chars=50)).matches
    assert (match.start, match.end) == (4, 1_003)
    assert match.text == "[3 chars cut]…" + "x" * 50 + "…[953 chars cut]"


# -- caps, counts, budgets --------------------------------------------------------------------------------------


def test_max_results_truncated_and_exact_total() -> None:
    text = "hit\n" * 1_234
    result = search_output(stored(text), literal("hit"), SearchOptions(max_results=10))
    assert len(result.matches) == 10
    assert [m.line for m in result.matches] == list(range(1, 11))
    assert (result.total_matches, result.total_is_exact, result.truncated) == (1_234, True, True)
    everything = search_output(stored(text), literal("hit"), SearchOptions(max_results=5_000), max_results_cap=2_000)
    assert len(everything.matches) == 1_234 and not everything.truncated


def test_max_results_is_capped_by_the_hard_limit() -> None:
    result = search_output(stored("x" * 100), literal("x"), SearchOptions(max_results=90), max_results_cap=20)
    assert len(result.matches) == 20 and result.total_matches == 100


def test_huge_match_sets_give_a_fast_lower_bound() -> None:
    output = stored("ab" * 3_000_000)  # 3 million matches of "a"
    started = time.monotonic()
    result = search_output(output, literal("a"), SearchOptions(max_total_count=100_000))
    assert time.monotonic() - started < 3
    assert (result.total_matches, result.total_is_exact, result.truncated) == (100_000, False, True)
    assert len(result.matches) == 50
    exact = search_output(stored("a" * 100), literal("a"), SearchOptions(max_total_count=100))
    assert (exact.total_matches, exact.total_is_exact) == (100, True)


def test_time_budget_stops_counting() -> None:
    output = stored("ab\n" * 2_000_000)
    started = time.monotonic()
    result = search_output(output, regex("a"), SearchOptions(max_total_count=10**9, time_budget_s=0.05))
    assert time.monotonic() - started < 1.5
    assert not result.total_is_exact and result.truncated
    assert 0 < result.total_matches < 2_000_000


@pytest.mark.parametrize("bad", [{"max_results": 0}, {"context_lines": 11}, {"context_lines": -1}, {"line_chars": 5}])
def test_bad_options_are_rejected(bad: dict[str, Any]) -> None:
    with pytest.raises(SearchError):
        search_output(stored("x"), literal("x"), SearchOptions(**bad))


# -- patterns the linear-time engine refuses --------------------------------------------------------------------

UNSUPPORTED = [
    (r"(ab)\1", ["backreference", "repeat the text"]),
    (r"(?P<x>a)(?P=x)", ["backreference"]),
    ("foo(?= bar)", ["lookahead", "surrounding text", "literal=true"]),
    ("foo(?!bar)", ["lookahead", "literal=true"]),
    ("(?<=foo )bar", ["lookbehind", "surrounding text"]),
    ("(?<!foo)bar", ["lookbehind"]),
    ("a++", ["possessive", "'a+'"]),
    ("a*+b", ["possessive"]),
    ("(?>ab)c", ["atomic", "(?:...)"]),
    (r"end\Z", ["\\z"]),
    ("(?(1)a|b)", ["conditionals", "alternation"]),
    (r"\u00e9", ["\\x{263A}"]),
    (r"\pL{1000}", ["too large", "repetition"]),
    ("a{1001}", ["1000"]),
    (r"\p{Klingon}", ["unknown unicode class"]),
    ("(unclosed", ["missing )", "literal=true"]),
    ("a*", ["empty string", "+ instead of *"]),
    ("x?", ["empty string"]),
    ("^", ["empty string"]),
    ("$", ["empty string"]),
    (r"\b", ["empty string"]),
    ("^$", ["empty string", "^\\r?\\n"]),
    ("foo|", ["empty string", "empty alternative"]),
    ("", ["empty"]),
    ("x" * 4097, ["4,097", "4,096"]),
    ("a\x00b", ["\\x00", "literal=true"]),
]


@pytest.mark.parametrize(("pattern", "hints"), UNSUPPORTED)
def test_unsupported_patterns_explain_the_alternative(pattern: str, hints: list[str]) -> None:
    with pytest.raises(SearchError) as caught:
        regex(pattern)
    message = str(caught.value)
    for hint in hints:
        assert hint in message, message


def test_literal_mode_takes_any_text() -> None:
    text = "call f(a)\\1 then x?.*[ and a\x00b"
    for needle in ["f(a)\\1", "x?.*[", "a\x00b"]:
        (found,) = spans(text, literal(needle))
        assert text[found[1] - 1 : found[2]] == needle
    with pytest.raises(SearchError, match="4,096"):
        literal("x" * 4097)


def test_catastrophic_pattern_runs_in_linear_time() -> None:
    output = stored("a" * 50_000 + "!")
    started = time.monotonic()
    result = search_output(output, regex("(a+)+$"), SearchOptions())
    assert time.monotonic() - started < 1
    assert result.total_matches == 0 and result.total_is_exact
    hit = search_output(stored("a" * 50_000), regex("(a+)+$"), SearchOptions())
    assert [(m.start, m.end) for m in hit.matches] == [(1, 50_000)]


def test_empty_lines_can_be_found_without_empty_matches() -> None:
    assert [m[0] for m in spans("a\n\nb\r\n\r\nc\n", regex(r"^\r?\n"))] == [2, 4]


# -- several outputs ----------------------------------------------------------------------------------------------


def test_search_outputs_merges_newest_first_with_handles() -> None:
    outputs = [
        stored("error one\nok\nerror two\n", HANDLE_A),
        stored("binary error", HANDLE_C, kind="blob"),
        stored("fine\nerror three\n", HANDLE_B),
    ]
    result = search_outputs(outputs, literal("error"), SearchOptions(max_results=2))
    assert [(m.handle, m.line, m.start) for m in result.matches] == [(HANDLE_A, 1, 1), (HANDLE_A, 3, 14)]
    assert (result.total_matches, result.total_is_exact, result.truncated, result.outputs_searched) == (
        3,
        True,
        True,
        2,
    )
    everything = search_outputs(outputs, literal("ERROR", case_sensitive=False), SearchOptions())
    assert [(m.handle, m.line, m.start, m.end) for m in everything.matches][-1] == (HANDLE_B, 2, 6, 10)
    assert not everything.truncated


def test_search_outputs_shares_the_count_bound() -> None:
    outputs = [stored("x" * 60, HANDLE_A), stored("x" * 60, HANDLE_B)]
    result = search_outputs(outputs, literal("x"), SearchOptions(max_total_count=100))
    assert (result.total_matches, result.total_is_exact) == (100, False)


def test_blob_output_cannot_be_searched() -> None:
    with pytest.raises(SearchError, match="binary"):
        search_output(stored("abc", kind="blob"), literal("a"), SearchOptions())
