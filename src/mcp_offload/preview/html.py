"""The preview of HTML: its title and headings as text (never the tag soup), with the line each heading is on.

The page is parsed with selectolax's Lexbor engine (an HTML5 parser: ~70 MB/s here against ~10 MB/s for the
stdlib's html.parser, same headings), the first `_PARSE_CHARS` characters only. A heading's text is what a reader
sees (tags dropped, entities decoded, whitespace folded); its line comes from the `<hN` tags in the source, taken
in document order. A page without headings gets the start of its visible text instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mcp_offload.preview.calls import RetrievalCall, read_lines, search_pattern
from mcp_offload.preview.fit import plural
from mcp_offload.preview.listing import fit_listing
from mcp_offload.unicode import replace_surrogates

if TYPE_CHECKING:  # imported on first use (~30 ms): a server that never sees HTML does not pay for it
    from selectolax.lexbor import LexborHTMLParser

__all__ = ["html_preview", "looks_like_html"]

_PARSE_CHARS = 8_000_000
_TAGS = re.compile(
    r"</?(?:html|head|body|div|p|h[1-6]|a|span|ul|ol|li|table|tr|td|section|article|nav|header|footer|main|script"
    r"|style|meta|link|title|br|img|form|input)\b",
    re.IGNORECASE,
)
_HEADING_TAG = re.compile(r"<h([1-6])(?=[\s>/])", re.IGNORECASE)
_SKIPPED = re.compile(r"<!--.*?-->|<script\b.*?</script\s*>|<style\b.*?</style\s*>", re.IGNORECASE | re.DOTALL)
_TITLE_WIDTH = 90
_TEXT_CHARS = 600
# Lexbor's tree building is quadratic in unclosed elements (20,000 unclosed <div><p><span> in 320 KB: 2.8 s): a page
# that opens far more elements than it closes is parsed on its first `_SOUP_CHARS` only (~0.1 s at worst).
_UNCLOSED = 2_000
_SOUP_CHARS = 64 * 1024
_OPENING = re.compile(r"<[a-zA-Z]")


def looks_like_html(head: str) -> bool:
    start = head.lstrip()[:200].lower()
    if start.startswith(("<!doctype html", "<html")):
        return True
    return start.startswith("<") and len(_TAGS.findall(head)) >= 10


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    text: str
    line: int


def _fold(text: str, width: int) -> str:
    text = replace_surrogates(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 1] + "…"


def _tag_lines(source: str) -> list[tuple[int, int]]:
    """(level, line) of every `<hN` tag outside comments, scripts and styles, in document order."""
    blanked = (
        _SKIPPED.sub(lambda m: "\n" * m.group(0).count("\n"), source)
        if "<!--" in source or "<s" in source.lower()
        else source
    )
    found: list[tuple[int, int]] = []
    line, pos = 1, 0
    for match in _HEADING_TAG.finditer(blanked):
        line += blanked.count("\n", pos, match.start())
        pos = match.start()
        found.append((int(match.group(1)), line))
    return found


def _headings(source: str, tree: LexborHTMLParser) -> list[_Heading]:
    parsed = [
        (int((node.tag or "h1")[1]), node.text(deep=True, separator=" ", strip=True))
        for node in tree.css("h1,h2,h3,h4,h5,h6")
    ]
    tags = _tag_lines(source)
    out: list[_Heading] = []
    t = 0
    for level, text in parsed:  # the parser's headings and the source's tags, both in document order
        while t < len(tags) and tags[t][0] != level:
            t += 1
        if t >= len(tags):
            break
        if text:
            out.append(_Heading(level, text, tags[t][1]))
        t += 1
    return out


def html_preview(
    text: str, budget: int, count: Callable[[str], int], total_lines: int
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary), or None when nothing readable is found."""
    source = text[:_PARSE_CHARS]
    if len(_OPENING.findall(source)) - source.count("</") > _UNCLOSED:
        source = source[:_SOUP_CHARS]
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(source)
    title_node = tree.css_first("title")
    title = _fold(title_node.text(strip=True), _TITLE_WIDTH) if title_node is not None else ""
    headings = _headings(source, tree)
    links, tables = len(tree.css("a[href]")), len(tree.css("table"))
    partial = f" (headings of the first {len(source):,} chars)" if len(source) < len(text) else ""
    facts = [
        f"html: {plural(total_lines, 'line')}, {plural(len(headings), 'heading')}, {plural(links, 'link')}, "
        f"{plural(tables, 'table')}{partial}"
    ]
    if title:
        facts.append(f"title: {title}")
    calls: list[tuple[str, RetrievalCall]] = []
    if not headings:
        body = tree.body
        visible = _fold(body.text(separator=" ", strip=True), _TEXT_CHARS) if body is not None else ""
        if not visible and not title:
            return None
        if visible:
            facts.append(f"text: {visible}")
        calls.append(("the page's first lines", read_lines(1, min(total_lines, 60))))
        listing = fit_listing(facts, "", [], calls, budget, count)
    else:
        top = min(h.level for h in headings)
        entries = [f"  {'  ' * (h.level - top)}L{h.line:,} h{h.level} {_fold(h.text, _TITLE_WIDTH)}" for h in headings]
        after = [h for h in headings[1:]]
        first = headings[0]
        end = next((h.line - 1 for h in after if h.level <= first.level and h.line > first.line), total_lines)
        end = min(end, first.line + 80)
        calls.append((f"the section {_fold(first.text, 40)}", read_lines(first.line, max(first.line, end))))
        calls.append(("every heading tag", search_pattern(r"<h[1-6][\s>]")))
        listing = fit_listing(
            facts, "headings (line of the tag):", entries, calls, budget, count, entries_noun="more headings"
        )
    data: dict[str, Any] = {
        "type": "html",
        "lines": total_lines,
        "title": title or None,
        "headings": [[h.line, h.level, _fold(h.text, _TITLE_WIDTH)] for h in headings[: listing.entries_shown]],
        "links": links,
        "tables": tables,
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data
