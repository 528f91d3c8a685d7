"""Pattern shapes are read conservatively: when unsure, unbounded, may span lines, no literal."""

from __future__ import annotations

import pytest

from mcp_offload.retrieve.pattern_shape import UNKNOWN, PatternShape, shape_of


@pytest.mark.parametrize(
    ("pattern", "shape"),
    [
        ("abc", PatternShape(12, False, (b"abc",))),
        ("[a-z]+Exception: timeout", PatternShape(None, False, (b"Exception: timeout",))),
        ("\\d+ ms ERROR", PatternShape(None, False, (b" ms ERROR",))),
        ("ERROR [a-z]+: timeout after \\d+ ms", PatternShape(None, False, (b"ERROR ", b": timeout after ", b" ms"))),
        ("a(?:bc)+d", PatternShape(None, False, (b"a", b"bc", b"d"))),
        ("a(?:bc)*d", PatternShape(None, False, (b"a", b"d"))),
        ("foo|bar", PatternShape(12, False, ())),
        ("a(?i:bc)d", PatternShape(16, False, (b"a", b"d"))),
        ("x.y", PatternShape(12, False, (b"x", b"y"))),
        ("(?s)x.y", PatternShape(12, True, (b"x", b"y"))),
        ("a\\s+b", PatternShape(None, True, (b"a", b"b"))),
        ("a[^b]*b", PatternShape(None, True, (b"a", b"b"))),
        ("a[^b\\n]*b", PatternShape(None, False, (b"a", b"b"))),
        ("a[\\t-\\r]b", PatternShape(12, True, (b"a", b"b"))),
        ("\\D", PatternShape(4, True, ())),
        ("\\S\\w\\d", PatternShape(12, False, ())),
        ("é{2,3}", PatternShape(12, False, ("é".encode(),))),
    ],
)
def test_shapes(pattern: str, shape: PatternShape) -> None:
    assert shape_of(pattern, literal=False, case_sensitive=True) == shape


@pytest.mark.parametrize(
    "pattern",
    ["\\pL+", "a\\z", "[[:space:]]x", "a{,3}", "\\x{263A}", "\\Qa.b\\E", "a(?s).b", "\\C", "\\012", "(?<n>a)"],
)
def test_syntax_read_differently_by_python_is_unknown(pattern: str) -> None:
    assert shape_of(pattern, literal=False, case_sensitive=True) == UNKNOWN


def test_case_insensitive_patterns_give_no_literal() -> None:
    assert shape_of("abc", literal=False, case_sensitive=False).literals == ()
    assert shape_of("(?i)abc", literal=False, case_sensitive=True).literals == ()


def test_literal_mode() -> None:
    assert shape_of("a.b\n", literal=True, case_sensitive=True) == PatternShape(4, True)
    assert shape_of("kk", literal=True, case_sensitive=False) == PatternShape(8, False)
