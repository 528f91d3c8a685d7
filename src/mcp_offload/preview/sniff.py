"""Which kind of text an output is (log, table, source code, diff, HTML, Markdown), from its content, cheaply.

Only the first `_HEAD_LINES` lines (at most `_HEAD_CHARS` characters) are looked at, so telling kinds apart
costs the same on 1 KB and on 100 MB, a few ms. Content that looks binary (a NUL, or more than 1 % control
characters) is no kind: it keeps today's text preview. The order settles overlaps: a diff holds code and
Markdown, HTML holds anything, a table's first column may be a timestamp (a table has a header line without
one), a log line may hold commas, and Markdown's `# ` headings are Python or shell comments unless the text reads
as no programming language.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from mcp_offload.preview.code import guess_language
from mcp_offload.preview.diff import looks_like_diff
from mcp_offload.preview.html import looks_like_html
from mcp_offload.preview.log import log_line_score
from mcp_offload.preview.markdown import looks_like_markdown
from mcp_offload.preview.table import sniff_delimiter

__all__ = ["Sniffed", "TextKind", "sniff_text_kind"]

TextKind = Literal["log", "table", "code", "diff", "html", "markdown"]

_HEAD_CHARS = 16 * 1024
_HEAD_LINES = 100
_MARKDOWN_CHARS = 64 * 1024  # a document's headings may sit far apart (a long code block under the first one)
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_LOG_SHARE = 0.5


@dataclass(frozen=True, slots=True)
class Sniffed:
    kind: TextKind
    detail: str | None = None  # the delimiter of a table, the language of code


def _head(text: str) -> str:
    if len(text) <= _HEAD_CHARS:
        return text
    cut = text.rfind("\n", 0, _HEAD_CHARS)
    return text[: cut if cut > 0 else _HEAD_CHARS]


def sniff_text_kind(text: str) -> Sniffed | None:
    """The kind of `text`, or None for plain text (and for anything that looks binary)."""
    head = _head(text)
    if not head.strip() or "\x00" in head or len(_CONTROL.findall(head)) * 100 > len(head):
        return None
    lines = head.split("\n", _HEAD_LINES)[:_HEAD_LINES]
    if len(lines) > 1 and len(text) > len(head):
        lines = lines[:-1]  # the last one may be cut
    if looks_like_diff(head):
        return Sniffed("diff")
    if looks_like_html(head):
        return Sniffed("html")
    log_share = log_line_score(lines)
    delimiter = sniff_delimiter(lines)
    if delimiter is not None and (log_share < _LOG_SHARE or log_line_score(lines[:1]) == 0):
        return Sniffed("table", delimiter)
    if log_share >= _LOG_SHARE:
        return Sniffed("log")
    language = guess_language(text, lines)
    if language is not None:
        return Sniffed("code", language)
    if looks_like_markdown(text[:_MARKDOWN_CHARS]):
        return Sniffed("markdown")
    return None
