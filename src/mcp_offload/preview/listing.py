"""Fitting a listing preview (facts, a list of entries, ready calls) to the token budget.

The previews of text kinds share one shape: a few lines of facts, a list of entries in order of usefulness
(templates, definitions, files, headings, sample rows) and the ready calls. The calls get up to 2/5 of the budget;
the entries get what the facts and calls leave, the most that fit, with a marker saying how many were left out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mcp_offload.preview.calls import RetrievalCall
from mcp_offload.preview.fit import fit_lines, largest

__all__ = ["Listing", "fit_listing"]

_CALLS_SHARE = 2 / 5


@dataclass(frozen=True, slots=True)
class Listing:
    text: str
    entries_shown: int
    calls: list[RetrievalCall]  # the calls the text shows


def fit_listing(
    facts: list[str],
    entries_title: str,
    entries: list[str],
    calls: list[tuple[str, RetrievalCall]],
    budget: int,
    count: Callable[[str], int],
    *,
    entries_noun: str = "more",
) -> Listing:
    """`calls` are (what it answers, the call) pairs, shown as `  call  # what` under "ready calls:"."""
    call_lines = fit_lines(
        ["ready calls:", *(f"  {call.render()}  # {why}" if why else f"  {call.render()}" for why, call in calls)],
        int(budget * _CALLS_SHARE),
        count,
    )
    shown_calls = [call for _, call in calls[: max(0, len(call_lines) - 1)]]
    if len(call_lines) == 1:
        call_lines = []

    def compose(n: int) -> str:
        body = [entries_title, *entries[:n]] if n and entries_title else entries[:n]
        if n < len(entries):
            body.append(f"  … {len(entries) - n:,} {entries_noun}")
        return "\n".join([*facts, *body, *call_lines])

    shown = max(0, largest(0, len(entries), lambda n: count(compose(n)) <= budget))
    return Listing(compose(shown), shown, shown_calls)
