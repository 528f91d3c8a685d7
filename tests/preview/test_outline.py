"""preview/outline.py: the shape of a document (types, optional keys, nested arrays), capped and fitted."""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_offload.preview import build_preview
from mcp_offload.preview.kinds import detect_kind
from mcp_offload.preview.outline import Outline, OutlineNode, abbreviate, describe_values, fit_outline, notes_text
from support.preview import api_response, assert_paths_work, len4, preview_of


def test_json_mixed_and_nested_arrays() -> None:
    doc = {"mixed": [1, "a", {"x": 1}, [2], None], "grid": [[{"c": 1}, {"c": 2}], [{"c": 3, "d": "z"}]], "e": [[]]}
    text = json.dumps(doc)
    preview = preview_of(text, count_tokens=len4)
    assert '"mixed": array[5] of (number|string|object|null|array[1] of number)  e.g. 1' in preview.text
    assert '"grid": array[2] of array[1..2] of object' in preview.text
    assert '    "d"?: string  e.g. "z"' in preview.text
    assert '"e": array[1] of array[0]' in preview.text
    assert_paths_work(preview.data["jq_paths"], text)
    assert preview.data["jq_paths"][0] == ".mixed | length"
    assert ".mixed[] | objects | select(.x == 1)" not in preview.data["jq_paths"]  # only strings are selected on


def test_json_deep_nesting_200_levels() -> None:
    deep: Any = {"leaf": "bottom", "n": 1}
    for i in range(200):
        deep = {"level": i, "child": deep} if i % 2 else [deep, {"k": i}]
    doc = {"deep": deep, "items": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}
    text = json.dumps(doc)
    kind, parsed = detect_kind(text)
    assert kind == "json"
    for budget in (50, 500, 3000):
        preview = build_preview(text, kind, parsed=parsed, budget_tokens=budget, count_tokens=len4)
        assert preview.tokens <= budget
    preview = build_preview(text, kind, parsed=parsed, budget_tokens=3000, count_tokens=len4)
    assert preview.data["outline_truncated"] is True
    assert max(len(line) - len(line.lstrip(" ")) for line in preview.text.split("\n")) <= 2 * 12
    assert_paths_work(preview.data["jq_paths"], text)


def test_json_many_keys_are_capped() -> None:
    doc = {f"user_{i}": {"id": i, "email": f"u{i}@x.org"} for i in range(10_000)}
    text = json.dumps(doc)
    preview = preview_of(text, budget_tokens=500, count_tokens=len4)
    assert preview.tokens <= 500
    assert preview.text.startswith("JSON object (10,000 keys)")
    assert re.search(r"^  … \+9,9\d\d more keys$", preview.text, re.M)
    assert preview.data["key_count"] == 10_000
    assert len(preview.data["keys"]) <= 40
    assert_paths_work(preview.data["jq_paths"], text)


def test_json_degrades_samples_before_structure() -> None:
    text = json.dumps(api_response(n_items=50))
    rich = preview_of(text, budget_tokens=2000, count_tokens=len4)
    tight = preview_of(text, budget_tokens=260, count_tokens=len4)
    assert "e.g." in rich.text
    assert tight.tokens <= 260
    # Under pressure the outline keeps the top-level keys; sample values go first.
    for key in ('"data"', '"meta"', '"errors"', '"extra"', '"key with space"'):
        assert key in tight.text
    assert tight.text.count("e.g.") < rich.text.count("e.g.")


# --------------------------------------------------------------------------------------------------------------
# unit tests of the outline on its own
# --------------------------------------------------------------------------------------------------------------


def test_describe_values_names_types_lengths_and_nesting() -> None:
    assert describe_values([1, "a", None], False) == "number|string|null"
    assert describe_values([[1, 2], [3]], False) == "array[1..2] of number"
    assert describe_values([[[]]], False) == "array[1] of array[0]"
    deep = describe_values([[[[[[1]]]]]], False)  # nesting is described 4 levels down, then "…"
    assert deep == "array[1] of array[1] of array[1] of array[1] of array[1] of …"


def test_abbreviate_cuts_strings_keys_items_and_depth() -> None:
    value = {"a": [1, 2, 3, 4, 5], "b": {"c": {"d": 1}}, "s": "x" * 50}
    assert abbreviate(value) == (
        '{"a": [1, 2, 3, 4, …+1 items], "b": {"c": {…1 keys}}, "s": "' + "x" * 40 + '"… [+10 chars]}'
    )
    assert abbreviate({str(i): i for i in range(10)}).endswith('"7": 7, …+2 keys}')
    assert (abbreviate({}), abbreviate([]), abbreviate([0, 1, 2])) == ("{}", "[]", "[0, 1, 2]")


def small_outline() -> Outline:
    doc = {"a": 1, "b": {"c": [{"x": 1}, {"y": "z"}]}}
    return Outline(OutlineNode(None, (), [doc], True, 0), 2000)


def test_outline_is_breadth_first_with_paths_and_optional_keys() -> None:
    outline = small_outline()
    got = [(n.key, n.path, n.depth, n.exact, n.optional) for n in outline.order]
    assert got == [
        ("a", ("a",), 1, True, False),
        ("b", ("b",), 1, True, False),
        ("c", ("b", "c"), 2, True, False),
        ("x", ("b", "c", None, "x"), 3, False, True),  # None: "every element" ([])
        ("y", ("b", "c", None, "y"), 3, False, True),
    ]
    lines, notes = outline.render_nodes(5, 5)
    assert lines == [
        '  "a": number = 1',
        '  "b": object',
        '    "c": array[2] of object',
        '      "x"?: number  e.g. 1',
        '      "y"?: string  e.g. "z"',
    ]
    assert notes == {"optional"}
    assert notes_text(notes) == ["(? = key missing in some elements)"]
    assert outline.render_nodes(2, 0) == (['  "a": number', '  "b": object (1 key)'], set())
    assert (outline.truncated(5), outline.truncated(2)) == (False, True)


def test_fit_outline_gives_up_samples_then_depth() -> None:
    outline = small_outline()

    def compose(shown: int, samples: int) -> str:
        body, notes = outline.render_nodes(shown, samples)
        return "\n".join([outline.header(shown, notes), *body, *notes_text(notes)])

    assert fit_outline(outline, compose, 1000, len4) == (5, 5)
    shown, samples = fit_outline(outline, compose, 15, len4)
    assert (shown, samples) == (2, 0)
    assert len4(compose(shown, samples)) <= 15
    assert fit_outline(outline, compose, 0, len4) == (0, 0)
    assert fit_outline(outline, compose, 1000, len4, samples_allowed=False) == (5, 0)
