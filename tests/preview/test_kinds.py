"""preview/kinds.py: JSON vs JSON Lines vs text, parsed exactly (big ints, surrogates), strictly (no NaN) and fast."""

from __future__ import annotations

import gc
import json
import re
import time
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.preview import build_preview
from mcp_offload.preview.kinds import (
    JsonLines,
    _has_digit_run,
    as_json_lines,
    detect_kind,
    free_later,
    gc_paused,
    parse_document,
)
from support.cpu_time import cpu_spent
from support.preview import len4

DETECT_CASES = [
    ('{"a": 1}', "json", {"a": 1}),
    ("[1, 2]", "json", [1, 2]),
    ("42", "json", 42),
    ('"x"', "json", "x"),
    ("null", "json", None),
    ("true", "json", True),
    (' \r\n\t{"a": [ ]}\n\n', "json", {"a": []}),
    ('{"a": 1}\n', "json", {"a": 1}),  # one line is a document, not JSON Lines
    ("{}", "json", {}),
    ('{"n": 123456789012345678901234567890}', "json", {"n": 123456789012345678901234567890}),
    ("-9223372036854775809", "json", -9223372036854775809),
    ("18446744073709551615", "json", 18446744073709551615),
    ("[1e400]", "json", [float("inf")]),
    ('{"k": "\\ud800"}', "json", {"k": "\ud800"}),  # escaped lone surrogate
    ('{"k": "\ud800"}', "json", {"k": "\ud800"}),  # raw lone surrogate in the str
    ('{"a": 1} trailing', "text", None),
    ("{not json at all", "text", None),
    ('{"a":1}{"b":2}', "text", None),
    ("", "text", None),
    ("\n\n  \n", "text", None),
    ("hello", "text", None),
    ("true story", "text", None),
    ("nullable", "text", None),
    ("2024-01-01 INFO started", "text", None),
    ("NaN", "text", None),
    ('{"a": NaN}', "text", None),
    ("[Infinity]", "text", None),
    ("1\n2\n3\n", "text", None),  # lines of scalars are text, not JSON Lines
    ('{"a":1}\n{"b":', "text", None),
    ('{"a":1}\nnot json\n', "text", None),
    ('[INFO] {"a": 1}\n[WARN] x\n', "text", None),
]


@pytest.mark.parametrize(("text", "kind", "value"), DETECT_CASES)
def test_detect_kind_table(text: str, kind: str, value: Any) -> None:
    got_kind, got_value = detect_kind(text)
    assert got_kind == kind
    if kind == "json":
        assert got_value == value
        assert type(got_value) is type(value)  # big ints stay ints, not floats
    else:
        assert got_value is None


JSONL_CASES = [
    ('{"a":1}\n{"b":2}', 2, True),
    ('{"a":1}\n{"b":2}\n', 2, True),  # NDJSON with trailing newline
    ('{"a":1}\n\n\n{"b":2}\n\n', 2, True),  # blank lines between records
    ('{"a":1}\r\n{"b":2}\r\n', 2, True),  # CRLF
    ('  {"a":1}\n\t{"b":2}  \n', 2, True),
    ("[1]\n[2, 3]\n", 2, False),
    ('{"a":1}\n[2]\n{"c": 3}\n', 3, False),
    ('{"k": "\\ud800"}\n{"k": "\udc00"}\n', 2, True),  # lone surrogates, escaped and raw
    ('{"n": 123456789012345678901234567890}\n{"n": 1}\n', 2, True),
]


@pytest.mark.parametrize(("text", "count", "all_objects"), JSONL_CASES)
def test_detect_json_lines(text: str, count: int, all_objects: bool) -> None:
    kind, lines = detect_kind(text)
    assert kind == "jsonl"
    assert isinstance(lines, JsonLines)
    assert lines.count == count
    assert lines.all_objects is all_objects
    assert lines.sample[0] == json.loads(text.strip().split("\n")[0])


def test_detect_json_lines_keeps_big_ints_exact_in_sample() -> None:
    _, lines = detect_kind('{"n": 123456789012345678901234567890}\n{"n": 1}\n')
    assert isinstance(lines, JsonLines)
    assert lines.sample[0]["n"] == 123456789012345678901234567890


def test_nesting_deeper_than_parsers_is_text() -> None:
    # orjson stops at 1024 levels, json at the recursion limit: such a document gets a text preview.
    deep = "[" * 5000 + "]" * 5000
    assert detect_kind(deep) == ("text", None)
    preview = build_preview(deep, "text", count_tokens=len4)
    assert preview.kind == "text"
    assert preview.tokens <= 500


def test_large_invalid_json_rejected_fast() -> None:
    for text in (
        "{e" * 50_000_000,  # 100 MB, ASCII, no newline
        "{é" * 25_000_000,  # non-ASCII: orjson would have to encode all of it first
        '{"a": 1}\n' + "not json\n" * 5_000_000,  # a first JSON line, then text
        '{"a": [1, 2, 3], "b": "' + "x" * 10_000_000 + '" oops',  # invalid late: full parse needed, still fine
    ):
        with cpu_spent() as spent:
            kind, _ = detect_kind(text)
        assert kind == "text"
        assert spent.seconds < (0.5 if "oops" in text[-10:] else 0.05), spent.seconds


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=40,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=JSON_VALUES, indent=st.sampled_from([None, 1, 2]), pad=st.integers(min_value=0, max_value=3000))
def test_large_valid_json_is_never_rejected_by_the_prefix_check(value: Any, indent: int | None, pad: int) -> None:
    # Over 64 KiB, a prefix is checked first; it must never reject a valid document, wherever the cut falls.
    piece = json.dumps(value, indent=indent, ensure_ascii=False)
    copies = 70_000 // (len(piece) + 1) + 1
    text = " " * pad + "[" + ",\n".join([piece] * copies) + "]"
    assert len(text) > 65_000
    kind, parsed = detect_kind(text)
    assert kind == "json"
    assert parsed == [value] * copies


# --------------------------------------------------------------------------------------------------------------
# unit tests of preview/kinds.py on its own
# --------------------------------------------------------------------------------------------------------------


def test_one_document_vs_json_lines_vs_text() -> None:
    assert detect_kind('{"a": 1}\n') == ("json", {"a": 1})
    kind, lines = detect_kind('{"a": 1}\n{"a": 2}\n')
    assert kind == "jsonl"
    assert lines == JsonLines(count=2, sample=[{"a": 1}, {"a": 2}], all_objects=True, all_arrays=False)
    assert detect_kind("[1]\n[2]\n\n") == ("jsonl", JsonLines(2, [[1], [2]], all_objects=False, all_arrays=True))
    assert detect_kind("plain words\n") == ("text", None)
    assert detect_kind('"a"\n"b"\n') == ("text", None)  # lines of scalars are not JSON Lines


def test_huge_integers_stay_exact() -> None:
    nines = int("9" * 400)
    assert detect_kind(f"[{nines}, -{nines}]") == ("json", [nines, -nines])
    ok, value = parse_document(f'{{"n": {2**64}}}')
    assert ok and value == {"n": 2**64} and type(value["n"]) is int
    _, lines = detect_kind(f'{{"n": {-(2**63) - 1}}}\n{{"n": {2**64 - 1}}}\n')
    assert isinstance(lines, JsonLines)
    assert lines.sample == [{"n": -(2**63) - 1}, {"n": 2**64 - 1}]


@pytest.mark.parametrize("text", ["NaN", "-Infinity", '{"a": Infinity}', "[1, NaN]"])
def test_nan_and_infinity_constants_are_rejected(text: str) -> None:
    assert parse_document(text) == (False, None)
    assert detect_kind(text) == ("text", None)
    assert detect_kind(f'{{"ok": 1}}\n[{text}]\n') == ("text", None)  # in a record of JSON Lines too


def test_nan_in_a_long_document_is_rejected_by_the_prefix_check() -> None:
    text = "[NaN, " + "1, " * 40_000 + "1]"
    assert len(text) > 64 * 1024
    assert parse_document(text) == (False, None)
    assert detect_kind(text) == ("text", None)


def test_a_byte_order_mark_makes_text() -> None:
    # A BOM is not JSON whitespace (RFC 8259 lets parsers reject it): the output is kept and previewed as text.
    assert detect_kind('\ufeff{"a": 1}') == ("text", None)
    assert parse_document('\ufeff{"a": 1}') == (False, None)
    assert detect_kind('{"a": "\ufeff"}') == ("json", {"a": "\ufeff"})  # inside a string it is just a character


def test_json_lines_with_one_bad_line_are_text() -> None:
    assert detect_kind('{"a": 1}\n{"b": 2}\n{bad\n') == ("text", None)
    # the bad line well past the first (64 KiB) chunk
    text = "\n".join(f'{{"i": {i}, "pad": "{"x" * 50}"}}' for i in range(3000)) + '\n{"i": oops}\n'
    assert len(text) > 128 * 1024
    assert detect_kind(text) == ("text", None)
    assert detect_kind(text.replace('{"i": oops}', '{"i": 3000}'))[0] == "jsonl"


def test_lone_surrogate_escapes_are_kept() -> None:
    assert detect_kind('{"k": "\\udc00x"}') == ("json", {"k": "\udc00x"})
    kind, lines = detect_kind('{"k": "\\udc00x"}\n["\\ud83d"]\n')
    assert kind == "jsonl"
    assert lines == JsonLines(count=2, sample=[{"k": "\udc00x"}, ["\ud83d"]], all_objects=False, all_arrays=False)


def test_long_json_lines_keep_a_sample_of_the_first_records() -> None:
    kind, lines = detect_kind("\n".join(f'{{"i": {i}}}' for i in range(100_000)))
    assert kind == "jsonl"
    assert isinstance(lines, JsonLines)
    assert lines.count == 100_000
    assert lines.sample[:64] == [{"i": i} for i in range(64)]
    assert 64 < len(lines.sample) <= 128


def test_as_json_lines_reuses_a_parsed_list() -> None:
    text = '{"a": 1}\n\n[2]\n'
    assert as_json_lines(text, [{"a": 1}, [2]]) == JsonLines(2, [{"a": 1}, [2]], all_objects=False, all_arrays=False)
    assert as_json_lines(text, None) == JsonLines(2, [{"a": 1}, [2]], all_objects=False, all_arrays=False)
    assert as_json_lines("not\njson", None) is None


@pytest.mark.parametrize("cut", [0, 1, 5, 18, 19, 20])
def test_big_integer_found_across_digit_scan_chunks(cut: int) -> None:
    """The bytes prefilter finds a 20-digit integer wherever it sits, also across a 1 MiB chunk edge."""
    big = 123456789012345678901
    head = '{"pad": "' + "x" * ((1 << 20) - 9 - 10 - cut) + '", "n": '
    text = f"{head}{big}}}"
    kind, value = detect_kind(text, text.encode())
    assert kind == "json"
    assert isinstance(value, dict) and value["n"] == big
    assert detect_kind('{"n": 1.5}', b'{"n": 1.5}') == ("json", {"n": 1.5})


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 300),
    st.integers(1, 30),
    st.sampled_from([0, (1 << 20) - 40]),
    st.text(alphabet='ab1",:.', max_size=60),
)
def test_the_word_filter_finds_every_run_of_19_digits(at: int, run: int, pad: int, filler: str) -> None:
    """A chunk is scanned for a run of 19 digits only when one of its aligned 8-byte words is all digits: whatever
    the run's length, offset and neighbours (digits too), near a 1 MiB chunk edge or not, the answer is a regex's."""
    data = (b"a" * pad + filler.encode() * 5)[: pad + at] + b"7" * run + filler.encode()
    assert _has_digit_run(data) == (re.search(rb"[0-9]{19}", data) is not None)


def test_a_parsed_document_freed_in_the_background_keeps_the_gc_paused_until_it_is_gone() -> None:
    """`free_later` frees off the answer's path; the GC comes back only when the last pause (a parse's, the
    freeing's) has ended, in whichever thread."""
    assert gc.isenabled()
    with gc_paused():
        _, value = detect_kind('{"a": [1, 2, 3]}')
        with gc_paused():  # nested: the inner end does not turn the GC back on
            pass
        assert not gc.isenabled()
        free_later(value)
        del value
    deadline = time.monotonic() + 30
    while not gc.isenabled() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gc.isenabled()
