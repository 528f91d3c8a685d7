"""The preview of plain text: the first and the last lines, long lines cut, fitted to the token budget.

About 60% of what fits goes to the head and 40% to the tail; a marker names the omitted line range, and each line
is cut at 200 characters (more when there are only a few, long lines), halving the width when not even one line
fits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.preview.fit import largest, plural
from mcp_offload.unicode import replace_surrogates

__all__ = ["count_lines", "text_preview"]

_LINE_WIDTH = 200
_EDGE_LINES = 200  # candidate lines taken from each end
_HEAD_SHARE = 0.6


def count_lines(text: str) -> int:
    """Lines as `ContentIndex` counts them: split on "\\n", a final line without "\\n" still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _cut_line(text: str, start: int, end: int, width: int) -> str:
    if end - start <= width:
        return text[start:end]
    return f"{text[start : start + width]}… [+{end - start - width:,} chars]"


def _edge_lines(text: str, total: int, width: int) -> tuple[list[str], list[str]]:
    head: list[str] = []
    pos = 0
    while pos < len(text) and len(head) < min(_EDGE_LINES, total):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        head.append(_cut_line(text, pos, end, width))
        pos = end + 1
    tail: list[str] = []
    end = len(text) - 1 if text.endswith("\n") else len(text)
    while end >= 0 and len(tail) < min(_EDGE_LINES, total - len(head)):
        start = text.rfind("\n", 0, end) + 1
        tail.append(_cut_line(text, start, end, width))
        end = start - 1
    tail.reverse()
    return head, tail


def text_preview(
    text: str, budget: int, count: Callable[[str], int], total_lines: int | None
) -> tuple[str, dict[str, Any]]:
    total = count_lines(text) if total_lines is None else total_lines
    header = f"text: {plural(total, 'line')}, {plural(len(text), 'char')}"
    width = _LINE_WIDTH
    if 0 < total < 10:  # few, long lines: give each a fair share of the budget instead of 200 chars
        sample = text[:2000]
        chars_per_token = len(sample) / max(1, count(sample))
        width = max(_LINE_WIDTH, int(budget * chars_per_token * 0.8) // total - 30)
    while True:
        head, tail = _edge_lines(text, total, width)
        shown_h, shown_t = _allocate(head, tail, total, header, budget, count)
        if shown_h + shown_t > 0 or width <= 20 or not head:
            break
        width //= 2
    rendered = _render_text(header, head[:shown_h], tail[len(tail) - shown_t :], total)
    omitted = [shown_h + 1, total - shown_t] if shown_h + shown_t < total else None
    data = {
        "lines": total,
        "chars": len(text),
        "head_lines": [replace_surrogates(line) for line in head[:shown_h]],
        "tail_lines": [replace_surrogates(line) for line in tail[len(tail) - shown_t :]],
        "omitted_lines": omitted,
    }
    return rendered, data


def _render_text(header: str, head: list[str], tail: list[str], total: int) -> str:
    parts = [header, *head]
    if len(head) + len(tail) < total:
        parts.append(f"… [lines {len(head) + 1:,}–{total - len(tail):,} omitted] …")
    parts.extend(tail)
    return "\n".join(parts)


def _allocate(
    head: list[str], tail: list[str], total: int, header: str, budget: int, count: Callable[[str], int]
) -> tuple[int, int]:
    """How many head and tail lines fit: the longest fitting prefix of a ~60/40 head/tail interleaving."""
    picks: list[tuple[int, int]] = [(0, 0)]  # (head lines, tail lines) after each pick
    h = t = chars = 0
    limit = budget * 8  # no counter gets below one token per 8 characters on such lines: bounds the search
    while (h < len(head) or t < len(tail)) and chars <= limit:
        if h < len(head) and (t >= len(tail) or h * (1 - _HEAD_SHARE) <= t * _HEAD_SHARE):
            chars += len(head[h]) + 1
            h += 1
        else:
            chars += len(tail[len(tail) - 1 - t]) + 1
            t += 1
        picks.append((h, t))

    def fits(i: int) -> bool:
        ph, pt = picks[i]
        return count(_render_text(header, head[:ph], tail[len(tail) - pt :], total)) <= budget

    return picks[max(0, largest(0, len(picks) - 1, fits))]
