"""Pattern shapes are read conservatively: when unsure, unbounded, may span lines, no literal."""

from __future__ import annotations

import pytest

from mcp_offload.retrieve.pattern_shape import UNKNOWN, Needle, PatternShape, shape_of


def texts(shape: PatternShape) -> list[list[str]]:
    return [[needle.text for needle in clause] for clause in shape.needs]


@pytest.mark.parametrize(
    ("pattern", "max_bytes", "spans_lines", "needs"),
    [
        ("abc", 12, False, [["abc"]]),
        ("[a-z]+Exception: timeout", None, False, [["Exception: timeout"]]),
        ("\\d+ ms ERROR", None, False, [[" ms ERROR"]]),
        ("ERROR [a-z]+: timeout after \\d+ ms", None, False, [["ERROR "], [": timeout after "], [" ms"]]),
        ("a(?:bc)+d", None, False, [["a"], ["bc"], ["d"]]),
        ("a(?:bc)*d", None, False, [["a"], ["d"]]),
        ("foo|bar", 12, False, [["foo", "bar"]]),
        (
            "timeout after|ZEBRA-\\d+|cache miss id=9999\\b",
            None,
            False,
            [["timeout after", "ZEBRA-", "cache miss id=9999"]],
        ),
        ("x(?:ab[0-9]cd|ef)", 24, False, [["x"], ["ab", "ef"]]),  # a branch gives its best clause
        ("(?:foo|[a-z]+)bar", None, False, [["bar"]]),  # a branch without a literal gives no clause
        ("|".join(f"w{i}x" for i in range(9)), 12, False, [["w"]]),  # too many needles: only the common prefix
        ("a(?i:bc)d", 16, False, [["a"], ["bc"], ["d"]]),
        ("x.y", 12, False, [["x"], ["y"]]),
        ("(?s)x.y", 12, True, [["x"], ["y"]]),
        ("a\\s+b", None, True, [["a"], ["b"]]),
        ("a[^b]*b", None, True, [["a"], ["b"]]),
        ("a[^b\\n]*b", None, False, [["a"], ["b"]]),
        ("a[\\t-\\r]b", 12, True, [["a"], ["b"]]),
        ("\\D", 4, True, []),
        ("\\S\\w\\d", 12, False, []),
        ("é{2,3}", 12, False, [["é"]]),
    ],
)
def test_shapes(pattern: str, max_bytes: int | None, spans_lines: bool, needs: list[list[str]]) -> None:
    shape = shape_of(pattern, literal=False, case_sensitive=True)
    assert (shape.max_bytes, shape.spans_lines, texts(shape)) == (max_bytes, spans_lines, needs)


@pytest.mark.parametrize(
    "pattern",
    ["\\pL+", "a\\z", "[[:space:]]x", "a{,3}", "\\x{263A}", "\\Qa.b\\E", "a(?s).b", "\\C", "\\012", "(?<n>a)"],
)
def test_syntax_read_differently_by_python_is_unknown(pattern: str) -> None:
    assert shape_of(pattern, literal=False, case_sensitive=True) == UNKNOWN


def test_case_insensitive_needles_are_folded() -> None:
    assert shape_of("abc", literal=False, case_sensitive=False).needs == ((Needle("abc", folded=True),),)
    assert shape_of("(?i)abc", literal=False, case_sensitive=True).needs == ((Needle("abc", folded=True),),)
    mixed = shape_of("x(?i:ab)(?-i:cd)", literal=False, case_sensitive=True).needs
    assert mixed == ((Needle("x"),), (Needle("ab", folded=True),), (Needle("cd"),))
    inverse = shape_of("x(?-i:cd)", literal=False, case_sensitive=False).needs
    assert inverse == ((Needle("x", folded=True),), (Needle("cd"),))


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "prefix"),
    [
        ("timeout after \\d+", True, Needle("timeout after ")),
        ("(?s)timeout after \\d+ ms\\n\\S+ INFO", True, Needle("timeout after ")),
        ("^(?:ab)c", True, Needle("abc")),  # the parser inlines a plain group
        ("^(ab)c", True, Needle("ab")),
        ("\\bab+c", True, Needle("ab")),
        ("a+b", True, Needle("a")),
        ("KEY=\\d+", False, Needle("KEY=", folded=True)),
        ("(?i:ab)c", True, Needle("ab", folded=True)),
        ("x?ab", True, None),
        ("[ab]c", True, None),
        ("ab|ac", True, Needle("a")),  # the parser factors the common prefix out of the branches
        ("ab|cd", True, None),
        ("(?i:ab)c", False, Needle("ab", folded=True)),
    ],
)
def test_prefix(pattern: str, case_sensitive: bool, prefix: Needle | None) -> None:
    assert shape_of(pattern, literal=False, case_sensitive=case_sensitive).prefix == prefix


def test_literal_mode() -> None:
    assert shape_of("a.b\n", literal=True, case_sensitive=True) == PatternShape(
        4, True, ((Needle("a.b\n"),),), Needle("a.b\n")
    )
    folded = Needle("kk", folded=True)
    assert shape_of("kk", literal=True, case_sensitive=False) == PatternShape(8, False, ((folded,),), folded)
