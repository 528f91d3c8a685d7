"""The preview of a text by what it holds: log, table, source code, diff, HTML or Markdown (sniff.py decides).

Each kind has its renderer (log.py, table.py, code.py, diff.py, html.py, markdown.py); a renderer returns None
when the text turns out not to be of its kind after all (a grammar that does not fit, a log of unreadable lines),
and any failure of a parser on hostile input counts the same: the text gets today's text preview. Sniffing reads
the first 64 KiB only and each renderer bounds its own work, so no text pays more than a bounded time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.preview.code import code_preview
from mcp_offload.preview.diff import diff_preview
from mcp_offload.preview.html import html_preview
from mcp_offload.preview.log import log_preview
from mcp_offload.preview.markdown import markdown_preview
from mcp_offload.preview.sniff import sniff_text_kind
from mcp_offload.preview.table import table_preview

__all__ = ["text_kind_preview"]


def text_kind_preview(
    text: str,
    budget: int,
    count: Callable[[str], int],
    total_lines: int,
    newlines_before: Callable[[int], int] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, structuredContent summary) for a text of a known kind, else None (plain text, or it failed).
    `newlines_before`: as for `log_preview` (a log's line numbers, from an index of the text)."""
    sniffed = sniff_text_kind(text)
    if sniffed is None:
        return None
    try:
        if sniffed.kind == "log":
            return log_preview(text, budget, count, total_lines, newlines_before)
        if sniffed.kind == "table" and sniffed.detail is not None:
            return table_preview(text, sniffed.detail, budget, count, total_lines)
        if sniffed.kind == "code" and sniffed.detail is not None:
            return code_preview(text, sniffed.detail, budget, count, total_lines)
        if sniffed.kind == "diff":
            return diff_preview(text, budget, count, total_lines)
        if sniffed.kind == "html":
            return html_preview(text, budget, count, total_lines)
        if sniffed.kind == "markdown":
            return markdown_preview(text, budget, count, total_lines)
    except (ValueError, RecursionError, UnicodeError, MemoryError, OverflowError, LookupError):
        return None  # a parser that chokes on hostile input: the plain text preview still describes it
    return None
