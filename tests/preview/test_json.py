"""preview/json.py: a JSON document's outline and jq paths together, within the budget, fast on 10 MB."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from mcp_offload.preview import build_preview
from mcp_offload.preview.kinds import detect_kind
from mcp_offload.store.base import Kind
from support.preview import (
    api_response,
    assert_paths_work,
    best_of,
    len4,
    log_records,
    preview_of,
    run_jq,
    word_tokens,
)


def test_json_preview_of_api_response_shows_shape() -> None:
    doc = api_response()
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    assert len(text) > 150_000
    preview = preview_of(text, budget_tokens=500, count_tokens=len4)
    assert preview.kind == "json"
    assert preview.tokens <= 500
    shown = preview.text
    lines = shown.split("\n")
    assert lines[0] == "JSON object (5 keys)"
    for expected in (
        '  "data": object',
        '    "items": array[420] of object',
        '      "name": string  e.g. "Widget 0"',
        '      "tags": array[0..3] of string',
        '      "owner"?: object',
        '        "login": string  e.g. "user0"',
        '      "discount"?: null',
        '      "content-type": string  e.g. "application/json"',
        '      "ünïcode key": boolean  e.g. true',
        '    "total_count": number = 1834',
        '  "errors": array[0]',
        '  "extra": object (empty)',
        '  "key with space": object',
        '    "a-b": array[3] of number  e.g. 1',
    ):
        assert any(line.startswith(expected) for line in lines), expected
    assert "? = key missing in some elements" in shown
    assert "long arrays described from 128 sampled elements" in shown
    paths = preview.data["jq_paths"]
    assert paths[:3] == [
        ".data.items | length",
        ".data.items[0].name",
        '.data.items[] | select(.status == "error")',
    ]
    assert ".data.total_count" in paths
    for path in paths:
        assert f"  {path}" in lines
    assert_paths_work(paths, text)
    assert run_jq(paths[0], text) == [420]
    assert preview.data["type"] == "object"
    assert preview.data["keys"]["data"] == "object"
    assert preview.data["keys"]["errors"] == "array[0]"
    assert len(json.dumps(preview.data)) < 2000


def test_json_top_level_array_and_scalars() -> None:
    text = json.dumps([{"id": i, "kind": "a" if i % 3 else "b", "v": [i]} for i in range(1000)])
    preview = preview_of(text, count_tokens=len4)
    assert preview.text.startswith("JSON array[1000] of object\n")
    assert preview.data["length"] == 1000
    assert preview.data["jq_paths"][:3] == ["length", ".[0].id", '.[] | select(.kind == "b")']
    assert_paths_work(preview.data["jq_paths"], text)

    numbers = preview_of(json.dumps(list(range(100_000))), count_tokens=len4)
    assert numbers.text.startswith("JSON array[100000] of number  first: [0, 1, 2, 3, …+99996 items]\n")
    assert numbers.data["jq_paths"] == ["length", ".[0]"]

    scalar = preview_of(json.dumps("x" * 5000), count_tokens=len4)
    assert scalar.text.startswith('JSON string = "xxxx')
    assert "… [+4,600 chars]" in scalar.text
    assert scalar.data["jq_paths"] == []
    assert preview_of("42", count_tokens=len4).text == "JSON number = 42"


@pytest.fixture(scope="module")
def two_mb() -> tuple[str, Any]:
    text = json.dumps(api_response(n_items=5600, seed=9))
    assert len(text) > 2_000_000
    kind, parsed = detect_kind(text)
    assert kind == "json"
    return text, parsed


@pytest.mark.parametrize("budget", [0, 8, 30, 100, 300, 500, 1500])
@pytest.mark.parametrize("counter", [len4, word_tokens])
def test_json_budget_respected_for_2mb_document(two_mb: tuple[str, Any], budget: int, counter: Any) -> None:
    text, parsed = two_mb
    kind: Kind = "json"
    preview = build_preview(text, kind, parsed=parsed, budget_tokens=budget, count_tokens=counter)
    assert preview.tokens == counter(preview.text) <= budget
    if budget >= 300:  # enough room: the main array and working paths are there
        assert '"items": array[5600] of object' in preview.text
        assert preview.data["jq_paths"][0] == ".data.items | length"
    if budget >= 1500:
        assert '"name": string  e.g. "Widget 0"' in preview.text
    json.dumps(preview.data)


@pytest.fixture(scope="module")
def ten_mb_records() -> list[dict[str, Any]]:
    return log_records(66_000)


def test_10mb_json_preview_under_300ms(ten_mb_records: list[dict[str, Any]]) -> None:
    records = ten_mb_records
    text = json.dumps({"items": records, "meta": {"total": len(records)}})
    assert len(text) > 10_000_000

    def run() -> None:
        kind, parsed = detect_kind(text)
        assert kind == "json"
        preview = build_preview(text, kind, parsed=parsed, count_tokens=len4)
        assert '"items": array[66000] of object' in preview.text

    # Yardstick from the same run: a bare orjson parse (~55 ms quiet, 4x that on a loaded 2-core box).
    bare = best_of(3, lambda: orjson.loads(text))
    took = best_of(3, run)
    assert took < max(0.3, 2 * bare + 0.05), (took, bare)
