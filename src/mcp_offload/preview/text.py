"""The preview of plain text: the first and the last lines, long lines cut, fitted to the token budget.

About 60% of what fits goes to the head and 40% to the tail; a marker names the omitted line range, and each line
is cut at 200 characters (more when there are only a few, long lines), halving the width when not even one line
fits. A run of identical lines (3 or more) is shown once with how many more there are and where: 5,000 lines of
`hello` preview as one `hello` and a note, not as a screenful of them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_offload.preview.fit import largest, plural
from mcp_offload.unicode import replace_surrogates

__all__ = ["count_lines", "text_preview"]

_LINE_WIDTH = 200
_EDGE_LINES = 200  # candidate lines taken from each end
_HEAD_SHARE = 0.6
_MIN_RUN = 3  # identical lines in a row shown once with a count from this many (two cost less than the note)


def count_lines(text: str) -> int:
    """Lines as `ContentIndex` counts them: split on "\\n", a final line without "\\n" still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _cut_line(text: str, start: int, end: int, width: int) -> str:
    if end - start <= width:
        return text[start:end]
    return f"{text[start : start + width]}… [+{end - start - width:,} chars]"


@dataclass(frozen=True, slots=True)
class _Entry:
    """One line as shown, or a run of identical lines: the line once, then how many more and where."""

    text: str
    first: int  # 1-based line number of its first line
    lines: int  # how many lines of the output it stands for


def _entry(line: str, first: int, count: int) -> _Entry:
    if count < _MIN_RUN:
        return _Entry(line, first, 1)
    return _Entry(
        f"{line}\n… [the same line {count - 1:,} more times: lines {first + 1:,}–{first + count - 1:,}] …",
        first,
        count,
    )


def _copies_after(text: str, pos: int, unit: str, limit: int) -> int:
    """How many more copies of `unit` follow at `pos` (within `limit`): galloping, so a run of a million identical
    lines costs ~20 string comparisons done in C, not a million Python steps."""
    size, more, step, shrinking = len(unit), 0, 1, False
    while step:
        at = pos + more * size
        if at + step * size <= limit and text.startswith(unit * step, at):
            more += step
            step = step if shrinking else step * 2
        else:
            shrinking, step = True, step // 2
    return more


def _copies_before(text: str, end: int, unit: str, limit: int) -> int:
    """How many more copies of `unit` end at `end` (none starting before `limit`); as `_copies_after`."""
    size, more, step, shrinking = len(unit), 0, 1, False
    while step:
        at = end - more * size
        if at - step * size >= limit and text.endswith(unit * step, at - step * size, at):
            more += step
            step = step if shrinking else step * 2
        else:
            shrinking, step = True, step // 2
    return more


def _head_entries(text: str, total: int, width: int) -> tuple[list[_Entry], int]:
    """Up to `_EDGE_LINES` entries from the start, and the position after the last line they cover."""
    head: list[_Entry] = []
    pos, line = 0, 1
    while pos < len(text) and len(head) < _EDGE_LINES and line <= total:
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        count, after = 1, end + 1
        if nl >= 0:
            more = _copies_after(text, after, text[pos:after], len(text))
            count, after = 1 + more, after + more * (after - pos)
            rest = len(text) - after  # the last line, without its "\n" (compared in place: no copy of the rest)
            if 0 < rest == end - pos and text.startswith(text[pos:end], after):
                count, after = count + 1, len(text)
        shown = _entry(_cut_line(text, pos, end, width), line, count)
        head.extend([shown] if shown.lines == count else [_Entry(shown.text, line + i, 1) for i in range(count)])
        pos, line = after, line + count
    return head[:_EDGE_LINES], min(pos, len(text))


def _tail_entries(text: str, total: int, width: int, limit: int, head_lines: int) -> list[_Entry]:
    """Up to `_EDGE_LINES` entries from the end, none starting before `limit` (where the head stopped)."""
    tail: list[_Entry] = []
    end = len(text) - 1 if text.endswith("\n") else len(text)  # end of the last line's content
    covered = 0
    while end >= limit and len(tail) < _EDGE_LINES and covered < total - head_lines:
        start = max(limit, text.rfind("\n", 0, end) + 1)
        line = text[start:end]
        more = _copies_before(text, start, line + "\n", limit)
        count = 1 + more
        shown = _entry(_cut_line(text, start, end, width), 0, count)
        first = total - covered - count + 1
        if shown.lines == count:
            tail.append(_entry(_cut_line(text, start, end, width), first, count))
        else:
            tail.extend(_Entry(shown.text, total - covered - i, 1) for i in range(count))
        covered += count
        end = start - more * (len(line) + 1) - 1
    tail.reverse()
    return tail[-_EDGE_LINES:] if tail else tail


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
        head, head_end = _head_entries(text, total, width)
        tail = _tail_entries(text, total, width, head_end, sum(e.lines for e in head))
        shown_h, shown_t = _allocate(head, tail, total, header, budget, count)
        if shown_h + shown_t > 0 or width <= 20 or not head:
            break
        width //= 2
    head, tail = head[:shown_h], tail[len(tail) - shown_t :]
    rendered = _render_text(header, head, tail, total)
    head_lines, tail_lines = sum(e.lines for e in head), sum(e.lines for e in tail)
    omitted = [head_lines + 1, total - tail_lines] if head_lines + tail_lines < total else None
    data = {
        "lines": total,
        "chars": len(text),
        "head_lines": [replace_surrogates(e.text) for e in head],
        "tail_lines": [replace_surrogates(e.text) for e in tail],
        "omitted_lines": omitted,
    }
    return rendered, data


def _render_text(header: str, head: list[_Entry], tail: list[_Entry], total: int) -> str:
    parts = [header, *(e.text for e in head)]
    head_lines, tail_lines = sum(e.lines for e in head), sum(e.lines for e in tail)
    if head_lines + tail_lines < total:
        parts.append(f"… [lines {head_lines + 1:,}–{total - tail_lines:,} omitted] …")
    parts.extend(e.text for e in tail)
    return "\n".join(parts)


def _allocate(
    head: list[_Entry], tail: list[_Entry], total: int, header: str, budget: int, count: Callable[[str], int]
) -> tuple[int, int]:
    """How many head and tail lines fit: the longest fitting prefix of a ~60/40 head/tail interleaving."""
    picks: list[tuple[int, int]] = [(0, 0)]  # (head lines, tail lines) after each pick
    h = t = chars = 0
    limit = budget * 8  # no counter gets below one token per 8 characters on such lines: bounds the search
    while (h < len(head) or t < len(tail)) and chars <= limit:
        if h < len(head) and (t >= len(tail) or h * (1 - _HEAD_SHARE) <= t * _HEAD_SHARE):
            chars += len(head[h].text) + 1
            h += 1
        else:
            chars += len(tail[len(tail) - 1 - t].text) + 1
            t += 1
        picks.append((h, t))

    def fits(i: int) -> bool:
        ph, pt = picks[i]
        return count(_render_text(header, head[:ph], tail[len(tail) - pt :], total)) <= budget

    return picks[max(0, largest(0, len(picks) - 1, fits))]
