"""Fitting a rendering to a token budget: the search and the small pieces every preview renderer shares.

Counting is the caller's (`count`, any str -> int); these functions only decide how much of a rendering to keep:
`largest` finds the most that fits by binary search, `fit_lines` keeps the longest fitting prefix of lines, and
`truncate_to_budget` is the last resort for budgets too small for any structure.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["fit_lines", "largest", "plural", "truncate_to_budget"]


def plural(n: int, word: str) -> str:
    """A count and its noun: 1 line, 2,000 lines."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest x in [lo, hi] seen to fit by binary search (lo - 1 when not even lo fits)."""
    best = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


def fit_lines(lines: list[str], budget: int, count: Callable[[str], int]) -> list[str]:
    """The longest prefix of `lines` costing at most `budget`."""
    kept = largest(0, len(lines), lambda n: count("\n".join(lines[:n])) <= budget)
    return lines[: max(0, kept)]


def truncate_to_budget(text: str, budget: int, count: Callable[[str], int]) -> str:
    """Last resort for tiny budgets: the longest prefix (plus "…") that fits."""
    best = ""
    lo, hi = 0, len(text)
    while lo <= hi:
        mid = (lo + hi) // 2
        candidate = text[:mid].rstrip() + "…" if mid else ""
        if count(candidate) <= budget:
            best, lo = candidate, mid + 1
        else:
            hi = mid - 1
    return best
