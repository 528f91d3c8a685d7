"""preview/__init__.py: build_preview picks the renderer, falls back to text, and always fits and is sendable."""

from __future__ import annotations

import json

from mcp_offload.preview import build_preview, estimate_tokens
from support.preview import len4, log_records


def test_kind_that_does_not_parse_falls_back_to_text() -> None:
    preview = build_preview("{oops", "json", count_tokens=len4)
    assert preview.kind == "text"
    assert "{oops" in preview.text
    assert build_preview("{oops\n[", "jsonl", count_tokens=len4).kind == "text"


def test_jsonl_accepts_a_plain_list_as_parsed() -> None:
    records = log_records(10)
    text = "\n".join(json.dumps(r) for r in records)
    preview = build_preview(text, "jsonl", parsed=records, count_tokens=len4)
    assert preview.data["records"] == 10


def test_tiny_budgets_cut_the_rendering_to_fit() -> None:
    text = "\n".join(f"line {i}" for i in range(100))
    full = build_preview(text, "text", budget_tokens=500, count_tokens=len4)
    assert full.text.startswith("text: 100 lines, 789 chars\nline 0\n")
    tiny = build_preview(text, "text", budget_tokens=3, count_tokens=len4)
    assert tiny.text == "text: 100 line…"
    assert tiny.tokens == len4(tiny.text) == 3
    assert build_preview(text, "text", budget_tokens=0, count_tokens=estimate_tokens).text == ""


def test_lone_surrogates_never_reach_the_rendering() -> None:
    preview = build_preview('{"k\\ud800": "v\\udfff"}', "json", count_tokens=len4)
    assert preview.kind == "json"
    assert preview.text == 'JSON object (1 key)\n  "k\ufffd": string = "v\ufffd"'
    assert preview.data["keys"] == {"k\ufffd": "string"}


def test_estimate_tokens_rounds_up() -> None:
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]
