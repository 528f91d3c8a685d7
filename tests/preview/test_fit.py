"""preview/fit.py: the binary search for the most that fits, line prefixes, the last-resort cut, plurals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.preview.fit import fit_lines, largest, plural, truncate_to_budget


def len4(text: str) -> int:
    return len(text) // 4


@given(lo=st.integers(-50, 50), span=st.integers(0, 100), cut=st.integers(-60, 160))
def test_largest_finds_the_last_fitting_value_of_a_monotone_test(lo: int, span: int, cut: int) -> None:
    hi = lo + span
    expected = max((x for x in range(lo, hi + 1) if x <= cut), default=lo - 1)
    assert largest(lo, hi, lambda x: x <= cut) == expected


def test_largest_probes_logarithmically() -> None:
    probes: list[int] = []

    def fits(x: int) -> bool:
        probes.append(x)
        return x <= 1234

    assert largest(0, 1_000_000, fits) == 1234
    assert len(probes) <= 21


def test_fit_lines_keeps_the_longest_fitting_prefix() -> None:
    lines = ["aaaa", "bbbb", "cccc"]  # "aaaa\nbbbb" is 9 chars: 2 by len4
    assert fit_lines(lines, 2, len4) == ["aaaa", "bbbb"]
    assert fit_lines(lines, 100, len4) == lines
    assert fit_lines(lines, 0, len4) == []
    assert fit_lines([], 5, len4) == []


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(0, "on…"), (1, "one tw…"), (2, "one two th…"), (3, "one two three…"), (9, "one two three…")],
)
def test_truncate_to_budget_cuts_with_an_ellipsis(budget: int, expected: str) -> None:
    # Only called on renderings over the budget, so the result always ends in "…".
    got = truncate_to_budget("one two three", budget, len4)
    assert got == expected
    assert len4(got) <= budget


def test_plural() -> None:
    assert [plural(n, "line") for n in (0, 1, 2, 2000)] == ["0 lines", "1 line", "2 lines", "2,000 lines"]
