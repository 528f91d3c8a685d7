"""preview/jq_examples.py: every emitted jq program runs (jq 1.6 CLI included) and yields non-null values."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.preview import build_preview
from mcp_offload.preview.kinds import detect_kind
from support.preview import JQ_CLI, assert_paths_work, len4, preview_of, word_tokens


def test_json_paths_quote_keys_and_run_in_jq_cli() -> None:
    doc = {
        "result-set": {
            "the items": [
                {"full name": f"n{i}", "if": i, "state": "bad" if i % 3 == 2 else "ok", "é": i, "a.b": {"x": 1}}
                for i in range(10)
            ],
            "count of": 10,
        }
    }
    text = json.dumps(doc)
    preview = preview_of(text, count_tokens=len4)
    paths = preview.data["jq_paths"]
    assert paths[:4] == [
        '.["result-set"]["the items"] | length',
        '.["result-set"]["the items"][0]["full name"]',
        '.["result-set"]["the items"][] | select(.state == "bad")',
        '.["result-set"]["the items"][] | {"full name": .["full name"], "if": .["if"], state}',
    ]
    assert '.["result-set"]["count of"]' in paths
    assert_paths_work(paths, text)
    for path in paths:  # jq 1.6, the oldest jq we support
        done = subprocess.run([JQ_CLI, "-c", path], input=text, capture_output=True, text=True, timeout=10)
        assert done.returncode == 0, (path, done.stderr)
        assert done.stdout.strip() and "null" not in done.stdout.split("\n")


def test_json_keys_with_lone_surrogates_get_no_paths() -> None:
    doc = {"bad\ud800": [{"x": 1}, {"x": 2}], "good": {"v": "ok"}}
    text = json.dumps(doc)  # ASCII escapes: what a tool would send
    preview = preview_of(text, count_tokens=len4)
    preview.text.encode("utf-8")
    json.dumps(preview.data, ensure_ascii=False).encode("utf-8")
    assert all("bad" not in p for p in preview.data["jq_paths"])
    assert preview.data["jq_paths"] == [".good.v"]
    assert '"bad\ufffd": array[2] of object' in preview.text


KEYS = st.text(st.characters(exclude_categories=["Cs"]), max_size=8) | st.sampled_from(
    ["id", "name", "status", "if", "a-b", "with space", "é", "", "0", "level", "type"]
)


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
    | st.sampled_from(["error", "ok", "warn"])
)


DOCS = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=8) | st.dictionaries(KEYS, children, max_size=7),
    max_leaves=60,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=DOCS, budget=st.integers(min_value=0, max_value=700))
def test_random_documents_paths_work_and_budget_holds(doc: Any, budget: int) -> None:
    text = json.dumps(doc, ensure_ascii=False)
    kind, parsed = detect_kind(text)
    assert kind == "json"
    preview = build_preview(text, kind, parsed=parsed, budget_tokens=budget, count_tokens=word_tokens)
    assert preview.tokens == word_tokens(preview.text) <= budget
    assert_paths_work(preview.data["jq_paths"], text)
    json.dumps(preview.data)


FIELDS = SCALARS | st.lists(SCALARS, max_size=3) | st.dictionaries(KEYS, SCALARS, max_size=3)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.dictionaries(KEYS, FIELDS, max_size=5), min_size=2, max_size=10))
def test_random_json_lines_paths_work(records: list[dict[str, Any]]) -> None:
    text = "\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n"
    kind, parsed = detect_kind(text)
    assert kind == "jsonl"
    preview = build_preview(text, kind, parsed=parsed, count_tokens=len4)
    assert preview.tokens <= 500
    assert_paths_work(preview.data["jq_paths"], text)
