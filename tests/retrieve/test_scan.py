"""The matching core against its oracle: RE2's own `finditer` over the whole text, with tiny windows so that
window edges, skips and prefilter chunks fall everywhere."""

from __future__ import annotations

import time

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.retrieve import scan as scan_module
from mcp_offload.retrieve.pattern import CompiledPattern, compile_pattern
from mcp_offload.retrieve.pattern_shape import shape_of
from mcp_offload.retrieve.scan import Scan, ascii_fold_orbit, plan_prefilter

PIECES = st.sampled_from(
    [
        "a",
        "b",
        "x",
        "y",
        "ab",
        "xy",
        "\n",
        "\n\n",
        "\r\n",
        " ",
        "0",
        "12",
        "é",
        "É",
        "😀",
        "\u212a",
        "k",
        "K",
        "ab1",
        "_",
        "s",
        "\u017f",
        "Ab",
        "xK",
        "kab",
    ]
)
TEXTS = st.lists(PIECES, max_size=150).map("".join)
PATTERNS = [
    "a[^b]*b",
    "(?s)x.*y",
    "(?s)x.*?y",
    "x.*y",
    "\\n\\n",
    "[0-9]+",
    "x|ab|b\\n",
    "é+",
    "ab+",
    "\\s+x",
    "[^\\n]+y",
    "y[0-9]*x",
    "(?s)a.{0,3}b",
    "12|0+",
    "\\bx[a-z]*",
    "😀.?é",
    "^\\r?\\n",
    "b$",
    "[a-z]*ab[0-9]",
    "[0-9]+ ab",
    "[xy]+ab1?",
    "(?:a|x)y+",
    "[^a]+",
    "\\x{263A}|é.",
    "\\pL+b",
    "\\n[ab]",
    "x\\n?y",
    "(?s)b.a",
    "[^x]{2}",
    "(?s)a.?b|a",
    "\\n\\n?",
    # alternations of literals, folded literals, literals after a flag group (prefilter / skip finders)
    "ab|xy",
    "ab1|é|k",
    "[0-9]x|yab",
    "(?:ab|xk)[0-9]*",
    "x(?i:ab)",
    "[xy]+(?i:kab)",
    "[0-9 ]+(?:ab|s )",
    "(?s)ab.y",
    "(?s)xy\\n+a",
    "(?i)[0-9]+kab",
    "é[a-z]*(?-i:ab)",
    "\\bK[a-z]+|12",
]


def oracle(data: bytes, pattern: CompiledPattern) -> list[tuple[int, int]]:
    options = re2.Options()
    options.case_sensitive = pattern.case_sensitive
    whole = re2.compile(("(?m)" + pattern.pattern).encode("utf-8"), options)
    return [m.span() for m in whole.finditer(data)]


def scanned(data: bytes, pattern: CompiledPattern) -> list[tuple[int, int]]:
    scan = Scan(data, pattern, time.monotonic() + 60)
    found = list(scan)
    assert scan.finished
    return found


def shrink(
    monkeypatch: pytest.MonkeyPatch, window: int, overlap: int, prefilter: bool, skip: bool, line_hits: int = 1
) -> None:
    monkeypatch.setattr(scan_module, "WINDOW", window)
    monkeypatch.setattr(scan_module, "_LINE_HITS", line_hits)
    monkeypatch.setattr(scan_module, "OVERLAP", overlap)
    monkeypatch.setattr(scan_module, "PREFILTER_CHUNK", 5)
    monkeypatch.setattr(scan_module, "PREFILTER_MIN_BYTES", 0 if prefilter else 1 << 60)
    monkeypatch.setattr(scan_module, "worth_prefiltering", lambda hits, size: True)
    monkeypatch.setattr(scan_module, "SKIP_MIN_BYTES", 0 if skip else 1 << 60)
    monkeypatch.setattr(scan_module, "worth_skipping", lambda rare, first, case_sensitive: True)


@settings(
    max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    text=TEXTS,
    pattern=st.sampled_from(PATTERNS),
    case_sensitive=st.booleans(),
    window=st.integers(2, 40),
    overlap=st.integers(1, 30),
    prefilter=st.booleans(),
    skip=st.booleans(),
    line_hits=st.integers(1, 3),
)
def test_scan_equals_re2_on_the_whole_text(
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    pattern: str,
    case_sensitive: bool,
    window: int,
    overlap: int,
    prefilter: bool,
    skip: bool,
    line_hits: int,
) -> None:
    shrink(monkeypatch, window, overlap, prefilter, skip, line_hits)
    compiled = compile_pattern(pattern, literal=False, case_sensitive=case_sensitive)
    data = text.encode("utf-8")
    assert scanned(data, compiled) == oracle(data, compiled)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    text=TEXTS,
    needle=st.lists(PIECES, min_size=1, max_size=3).map("".join),
    case_sensitive=st.booleans(),
    window=st.integers(2, 12),
    overlap=st.integers(1, 12),
)
def test_literal_scan_equals_re2_on_the_whole_text(
    monkeypatch: pytest.MonkeyPatch, text: str, needle: str, case_sensitive: bool, window: int, overlap: int
) -> None:
    shrink(monkeypatch, window, overlap, prefilter=True, skip=True)
    compiled = compile_pattern(needle, literal=True, case_sensitive=case_sensitive)
    data = text.encode("utf-8")
    escaped = compile_pattern(re2.escape(needle), literal=False, case_sensitive=case_sensitive)
    assert scanned(data, compiled) == oracle(data, escaped)


def test_bounded_matches_at_every_window_edge(monkeypatch: pytest.MonkeyPatch) -> None:
    """A short match the window cuts off must win over a shorter alternative that fits."""
    monkeypatch.setattr(scan_module, "OVERLAP", 12)
    for window in range(13, 20):
        monkeypatch.setattr(scan_module, "WINDOW", window)
        for pad in range(30):
            data = ("x" * pad + "a\nb a ab " + "x" * pad).encode()
            for pattern in ["(?s)a.?b|a", "\\n\\n?|b"]:
                compiled = compile_pattern(pattern, literal=False, case_sensitive=True)
                assert scanned(data, compiled) == oracle(data, compiled), (window, pad, pattern)


def test_a_long_multiline_match_across_many_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug this module fixes: a match longer than the overlap, crossing a window edge, was missed."""
    monkeypatch.setattr(scan_module, "WINDOW", 1000)
    monkeypatch.setattr(scan_module, "OVERLAP", 100)
    data = ("x" * 950 + "\nBEGIN" + "-\n" * 5000 + "END\n" + "filler\n" * 500 + "BEGIN tail END").encode()
    for pattern in ["(?s)BEGIN.*?END", "BEGIN[^E]*END", "(?s)BEGIN.*END"]:
        compiled = compile_pattern(pattern, literal=False, case_sensitive=True)
        assert scanned(data, compiled) == oracle(data, compiled), pattern
        assert scanned(data, compiled)[0][0] == 951, pattern


def test_a_line_longer_than_the_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_module, "WINDOW", 64)
    data = ("[" + ",".join(f'{{"id":{i},"name":"n{i}"}}' for i in range(2000)) + "]\n").encode()
    for pattern in ['"name":"n1[0-9]*"', '\\{"id":[0-9]+', "n19+"]:
        compiled = compile_pattern(pattern, literal=False, case_sensitive=True)
        assert scanned(data, compiled) == oracle(data, compiled), pattern


def test_prefilter_plan_on_a_real_text() -> None:
    """Real thresholds: an inner literal that is rare in the text is found first; a common one is not used."""
    lines = [f"2026-11-21 INFO api: user{n} ok in {n % 97} ms" for n in range(20_000)]
    lines[12_345] = "2026-11-21 ERROR db: ValueException: timeout after 31 ms"
    data = ("\n".join(lines) + "\n").encode()
    rare = compile_pattern("[A-Za-z]+Exception: timeout", literal=False, case_sensitive=True)
    plan = plan_prefilter(data, shape_of(rare.pattern, literal=False, case_sensitive=True))
    assert plan is not None and [n.text for n in plan.needles] == ["Exception: timeout"]
    assert scanned(data, rare) == oracle(data, rare) and len(scanned(data, rare)) == 1
    common = compile_pattern("user[0-9]+ ok", literal=False, case_sensitive=True)
    assert plan_prefilter(data, shape_of(common.pattern, literal=False, case_sensitive=True)) is None
    insensitive = compile_pattern("[a-z]+exception: TIMEOUT", literal=False, case_sensitive=False)
    plan = plan_prefilter(data, shape_of(insensitive.pattern, literal=False, case_sensitive=False))
    assert plan is not None and [n.text for n in plan.needles] == ["exception: TIMEOUT"]
    assert len(plan.finders) == 2  # one per case of its rarest letter
    assert scanned(data, insensitive) == oracle(data, insensitive) and len(scanned(data, insensitive)) == 1
    alternation = compile_pattern("[A-Za-z]+Exception|user19999 ok|ERROR db", literal=False, case_sensitive=True)
    plan = plan_prefilter(data, shape_of(alternation.pattern, literal=False, case_sensitive=True))
    assert plan is not None and [n.text for n in plan.needles] == ["Exception", "user19999 ok", "ERROR db"]
    assert scanned(data, alternation) == oracle(data, alternation) and len(scanned(data, alternation)) == 3
    one_common = compile_pattern("[a-z]+Exception|user[0-9]+ ok", literal=False, case_sensitive=True)
    assert plan_prefilter(data, shape_of(one_common.pattern, literal=False, case_sensitive=True)) is None


def test_a_flag_group_keeps_the_leading_literal() -> None:
    """`(?s)timeout after ...` starts with a literal as much as `timeout after ...` does: the skip uses it."""
    compiled = compile_pattern("(?s)timeout after \\d+ ms\\n\\S+ INFO", literal=False, case_sensitive=True)
    assert compiled.lead == "timeout after "
    folded = compile_pattern("(?i)timeout", literal=False, case_sensitive=True)
    assert folded.lead == ""  # folded by its own flag: not a case-sensitive lead


def test_ascii_fold_orbits_are_re2s() -> None:
    """Every code point RE2 folds to an ASCII letter or symbol is in that character's orbit."""
    options = re2.Options()
    options.case_sensitive = False
    everything = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    for char in map(chr, range(0x20, 0x7F)):
        variants = {m.group() for m in re2.compile(re2.escape(char), options).finditer(everything)}
        assert variants == set(ascii_fold_orbit(char)), char


def test_deadline_stops_the_scan() -> None:
    data = b"ab\n" * 100_000
    scan = Scan(data, compile_pattern("ab", literal=False, case_sensitive=True), time.monotonic() - 1)
    assert list(scan) == [] and not scan.finished


def test_deadline_stops_a_prefiltered_scan() -> None:
    data = b"".join(b"line %d ok\n" % n if n % 1000 else b"db: timeout %d\n" % n for n in range(60_000))
    pattern = compile_pattern("[a-z]+: timeout", literal=False, case_sensitive=True)
    done = Scan(data, pattern, time.monotonic() + 60)
    assert done.prefilter is not None and len(list(done)) == 60 and done.finished
    late = Scan(data, pattern, time.monotonic() - 1)
    assert list(late) == [] and not late.finished


@given(st.binary(max_size=4000), st.binary(min_size=1, max_size=3))
def test_sample_counts_are_bytes_counts(data: bytes, needle: bytes) -> None:
    """The planners' counts (one vectorised histogram for single bytes) agree with `bytes.count`."""
    sample = scan_module.Sample(data)
    assert sample.data == data  # small texts are their own sample
    assert sample.count(needle) == data.count(needle)
    for byte in set(data[:20]):
        assert sample.count(bytes((byte,))) == data.count(bytes((byte,)))


def test_sample_of_a_large_text_is_its_start_middle_and_end() -> None:
    piece = scan_module._SAMPLE
    data = b"a" * piece + b"b" * (2 * piece) + b"c" * piece
    sample = scan_module.Sample(data)
    assert sample.data == b"a" * piece + b"b" * piece + b"c" * piece
    assert [sample.count(x) for x in (b"a", b"b", b"c", b"\x00")] == [piece, piece, piece, 0]
