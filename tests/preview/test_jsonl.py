"""preview/jsonl.py: record count, record outline, sample records and per-record filters, within the budget."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from mcp_offload.preview import build_preview
from mcp_offload.preview.kinds import detect_kind
from support.preview import assert_paths_work, best_of, len4, log_records, preview_of, run_jq, word_tokens


def test_jsonl_preview() -> None:
    records = log_records(5000)
    text = "\n".join(json.dumps(r) for r in records) + "\n"
    preview = preview_of(text, budget_tokens=500, count_tokens=len4)
    assert preview.kind == "jsonl"
    assert preview.tokens <= 500
    lines = preview.text.split("\n")
    assert lines[0] == "JSON Lines: 5,000 records (objects); jq filters run once per record"
    assert '  "level": string' in lines
    assert '  "trace-id"?: string' in lines
    assert '    "status": number' in lines
    start = lines.index("sample records:")
    assert lines[start + 1].startswith('  {"ts": "2024-05-01T12:00:00Z", "level": ')
    assert '"trace-id"' in lines[start + 2]  # the second sample is one that looks different
    assert preview.data["records"] == 5000
    paths = preview.data["jq_paths"]
    assert paths[:2] == [".level", 'select(.level == "error") | .ts']
    assert_paths_work(paths, text)
    assert len(run_jq(paths[0], text)) == 5000
    assert len(run_jq(paths[1], text)) == sum(r["level"] == "error" for r in records)


def test_jsonl_mixed_records_use_objects_filter() -> None:
    text = '{"level": "info", "m": 1}\n[1, 2]\n{"level": "error", "m": 2}\n{"level": "info", "m": 3}\n'
    preview = preview_of(text, count_tokens=len4)
    assert preview.kind == "jsonl"
    assert "(objects and arrays)" in preview.text
    assert all(p.startswith("objects | ") for p in preview.data["jq_paths"])
    assert_paths_work(preview.data["jq_paths"], text)


@pytest.mark.parametrize("budget", [0, 20, 80, 200, 500])
def test_jsonl_budget(budget: int) -> None:
    text = "\n".join(json.dumps(r) for r in log_records(300)) + "\n"
    for counter in (len4, word_tokens):
        preview = preview_of(text, budget_tokens=budget, count_tokens=counter)
        assert preview.tokens == counter(preview.text) <= budget


def test_jsonl_of_array_records() -> None:
    text = "\n".join(json.dumps([i, "x", {"y": i}]) for i in range(100))
    preview = preview_of(text, count_tokens=len4)
    lines = preview.text.split("\n")
    assert lines[0] == "JSON Lines: 100 records (arrays); jq filters run once per record"
    # every position of tuple-like records is sampled, so the object in third place shows up
    assert lines[1] == "record shape (from 100 sampled records): array[3] of (number|string|object)"
    assert lines[2] == '  "y": number'
    assert preview.data["record_type"] == "array"
    assert preview.data["jq_paths"] == ["length", ".[0]"]
    assert run_jq(".[0]", text)[:2] == [0, 1]
    assert_paths_work(preview.data["jq_paths"], text)


@pytest.fixture(scope="module")
def ten_mb_records() -> list[dict[str, Any]]:
    return log_records(66_000)


def test_10mb_jsonl_preview_fast(ten_mb_records: list[dict[str, Any]]) -> None:
    text = "\n".join(json.dumps(r) for r in ten_mb_records) + "\n"
    assert len(text) > 10_000_000

    def run() -> None:
        kind, parsed = detect_kind(text)
        assert kind == "jsonl"
        preview = build_preview(text, kind, parsed=parsed, count_tokens=len4)
        assert preview.data["records"] == 66_000

    bare = best_of(3, lambda: [orjson.loads(line) for line in text.splitlines()])
    took = best_of(3, run)
    assert took < max(0.15, 2 * bare + 0.05), (took, bare)  # ~50-70 ms quiet
