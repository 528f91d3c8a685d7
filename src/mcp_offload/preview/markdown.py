"""The preview of Markdown: the heading outline with each section's line range.

Headings are ATX (`## Title`) and setext (a line underlined with `===` or `---`), outside fenced code blocks
(where `# ` starts a shell comment). A section runs to the next heading of the same or a higher level. The first
`_SCAN_CHARS` characters are outlined, so the work is bounded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_offload.preview.calls import RetrievalCall, read_lines, regex_escape, search_pattern
from mcp_offload.preview.fit import plural
from mcp_offload.preview.listing import fit_listing
from mcp_offload.unicode import replace_surrogates

__all__ = ["Heading", "looks_like_markdown", "markdown_headings", "markdown_preview"]

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-{2,})[ \t]*$")
_LINK = re.compile(r"\[[^\]\n]+\]\([^)\s]+\)")
_NOT_PARAGRAPH = re.compile(r"^\s*(?:[-*+>|]|\d+[.)]\s|$)")
_SCAN_CHARS = 8_000_000
_TITLE_WIDTH = 90


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int  # 1-based
    end_line: int = 0  # the section's last line
    atx: bool = True  # written `## Title` (else underlined)


_HEADING_AFTER_BLANK = re.compile(r"\n[ \t]*\n {0,3}#{1,6}[ \t]+\S")  # starts with a literal: a fast scan
_FIRST_HEADING = re.compile(r" {0,3}#{1,6}[ \t]+\S")
_FENCES = re.compile(r"(?m)^ {0,3}(?:`{3,}|~{3,})")
_LISTS = re.compile(r"(?m)^[ \t]*(?:[-*+]|\d+[.)])[ \t]+\S")


def looks_like_markdown(head: str) -> bool:
    """Headings after blank lines with other Markdown around them: more than comments that start with `# `.

    `head` is the start of the text (64 KiB is plenty): one regex pass per signal, no per-line Python loop.
    """
    if "#" not in head:
        return False
    headings = len(_HEADING_AFTER_BLANK.findall(head)) + (1 if _FIRST_HEADING.match(head) else 0)
    if not headings:
        return False
    fences = len(_FENCES.findall(head))
    links = len(_LINK.findall(head))
    lists = len(_LISTS.findall(head))
    return headings + fences // 2 + min(links, 3) + min(lists, 3) >= 3


def markdown_headings(text: str) -> tuple[list[Heading], int]:
    """The headings of `text` (its first `_SCAN_CHARS` characters) and how many lines were scanned."""
    scanned = text[:_SCAN_CHARS]
    lines = scanned.split("\n")
    found: list[tuple[int, str, int, bool]] = []
    fence: str | None = None
    previous = ""
    for number, line in enumerate(lines, 1):
        opening = _FENCE.match(line)
        if fence is not None:
            if opening is not None and opening.group(1)[0] == fence[0] and len(opening.group(1)) >= len(fence):
                fence = None
            previous = ""
            continue
        if opening is not None:
            fence = opening.group(1)
            previous = ""
            continue
        atx = _ATX.match(line)
        if atx is not None:
            found.append((len(atx.group(1)), atx.group(2).strip(), number, True))
        elif (setext := _SETEXT.match(line)) and previous.strip() and not _NOT_PARAGRAPH.match(previous):
            found.append((1 if setext.group(1)[0] == "=" else 2, previous.strip(), number - 1, False))
        previous = line
    last = len(lines) - (1 if scanned.endswith("\n") else 0)
    headings = []
    for i, (level, title, number, atx_written) in enumerate(found):
        end = next((f[2] - 1 for f in found[i + 1 :] if f[0] <= level), last)
        headings.append(Heading(level, title, number, max(number, end), atx_written))
    return headings, last


def _cut(text: str, width: int = _TITLE_WIDTH) -> str:
    text = replace_surrogates(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def markdown_preview(
    text: str, budget: int, count: Callable[[str], int], total_lines: int
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary), or None without headings."""
    headings, scanned = markdown_headings(text)
    if not headings:
        return None
    partial = f" (outline of the first {plural(scanned, 'line')})" if scanned < total_lines else ""
    facts = [f"markdown: {plural(total_lines, 'line')}, {plural(len(headings), 'heading')}{partial}"]
    top = min(h.level for h in headings)
    entries = [f"  {'  ' * (h.level - top)}L{h.line:,}–{h.end_line:,} {'#' * h.level} {_cut(h.text)}" for h in headings]
    calls: list[tuple[str, RetrievalCall]] = []
    sections = [h for h in headings if h.level <= top + 1 and h.end_line > h.line] or headings
    biggest = max(sections, key=lambda h: h.end_line - h.line)
    calls.append((f"the section {_cut(biggest.text, 40)}", read_lines(biggest.line, biggest.end_line)))
    named = next((h for h in headings if h.level > top and h.text and h.atx), None)
    if named is not None:
        pattern = rf"^ {{0,3}}#{{{named.level}}}\s+{regex_escape(named.text[:60])}"
        calls.append((f"the heading {_cut(named.text, 40)}", search_pattern(pattern)))
    listing = fit_listing(
        facts, "outline (lines of each section):", entries, calls, budget, count, entries_noun="more headings"
    )
    data: dict[str, Any] = {
        "type": "markdown",
        "lines": total_lines,
        "headings": [[h.line, h.end_line, h.level, _cut(h.text)] for h in headings[: listing.entries_shown]],
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data
