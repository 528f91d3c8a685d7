"""What the model sees instead of a large output: a small preview that decides its next call.

A preview has to say what is there and how to get at it, in a few hundred tokens. `build_preview` is the entry: it
takes the kind `detect_kind` found (preview/kinds.py) and hands the output to its renderer: json.py (the outline of the
document, outline.py, and jq examples that run, jq_examples.py), jsonl.py (record count, record outline, sample
records, per-record filters) or, for text, text_kinds.py (a log, table, source code, diff, HTML or Markdown,
told apart by sniff.py) and else text.py (the first and the last lines). Each renderer fits its rendering to the token
budget with the caller's counter (fit.py); the entry makes the result sendable (no lone surrogates) and, as a last
resort for tiny budgets, cuts it to fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp_offload.preview.fit import truncate_to_budget
from mcp_offload.preview.json import json_preview
from mcp_offload.preview.jsonl import jsonl_preview
from mcp_offload.preview.kinds import JsonLines, as_json_lines, detect_kind, parse_document
from mcp_offload.preview.text import count_lines, text_preview
from mcp_offload.preview.text_kinds import text_kind_preview
from mcp_offload.store.base import Kind
from mcp_offload.unicode import replace_surrogates

__all__ = ["JsonLines", "Preview", "build_preview", "detect_kind", "estimate_tokens"]


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (about 4 characters a token), rounded up."""
    return (len(text) + 3) // 4


@dataclass(frozen=True)
class Preview:
    kind: Kind
    text: str  # the rendered preview; the caller adds the handle and how to retrieve more
    data: dict[str, Any]  # small, JSON-serialisable summary: the result's `shape` (programs read it in `_meta`)
    tokens: int  # of `text`, by the counter the preview was fitted with


# --------------------------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------------------------


def build_preview(
    text: str,
    kind: Kind,
    *,
    parsed: object | None = None,
    budget_tokens: int = 500,
    count_tokens: Callable[[str], int] = estimate_tokens,
    total_lines: int | None = None,
    newlines_before: Callable[[int], int] | None = None,
) -> Preview:
    """Render the preview of `text` (of `kind`, as `detect_kind` said) in at most `budget_tokens` tokens.

    `parsed` is what `detect_kind` returned alongside the kind (parsed again when missing). A text that turns out
    not to be what `kind` says gets a text preview. `newlines_before(pos)`, when given, is how many newlines
    `text[:pos]` holds (from the stored output's content index: the preview then need not count them itself); the
    preview is the same with it or without.
    """
    budget = max(0, budget_tokens)
    if kind == "json":
        if parsed is None:
            ok, parsed = parse_document(text)
            if not ok:
                kind = "text"
        if kind == "json":
            rendered, data = json_preview(parsed, budget, count_tokens)
            return _finish("json", rendered, data, budget, count_tokens)
    if kind == "jsonl":
        lines = parsed if isinstance(parsed, JsonLines) else as_json_lines(text, parsed)
        if lines is not None:
            rendered, data = jsonl_preview(lines, budget, count_tokens)
            return _finish("jsonl", rendered, data, budget, count_tokens)
        kind = "text"
    if kind == "text":
        line_count = count_lines(text) if total_lines is None else total_lines
        described = text_kind_preview(text, budget, count_tokens, line_count, newlines_before)
        if described is not None:
            return _finish(kind, *described, budget, count_tokens)
    rendered, data = text_preview(text, budget, count_tokens, total_lines)
    return _finish(kind, rendered, data, budget, count_tokens)


def _finish(kind: Kind, text: str, data: dict[str, Any], budget: int, count: Callable[[str], int]) -> Preview:
    text = replace_surrogates(text)
    tokens = count(text)
    if tokens > budget:
        text = truncate_to_budget(text, budget, count)
        tokens = count(text)
    return Preview(kind=kind, text=text, data=data, tokens=tokens)
