"""The preview of JSON Lines: record count, the outline of the sampled records, two sample records, jq filters.

Sample records (the first one and the first that looks different) are abbreviated to a width that fits 7/20 of the
budget; when they fit, the outline goes without sample values. jq filters run once per record and get up to 2/5.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.preview.fit import fit_lines, plural
from mcp_offload.preview.jq_examples import jsonl_examples
from mcp_offload.preview.kinds import JsonLines
from mcp_offload.preview.outline import Outline, OutlineNode, abbreviate, fit_outline, notes_text, outline_char_cap
from mcp_offload.unicode import replace_surrogates

__all__ = ["jsonl_preview"]


def _pick_samples(records: list[Any]) -> list[Any]:
    """The first record and the first one that looks different (other keys), else the second."""
    if len(records) < 2:
        return records[:1]
    first = records[0]
    first_keys = set(first) if first.__class__ is dict else None
    for record in records[1:]:
        keys = set(record) if record.__class__ is dict else None
        if keys != first_keys:
            return [first, record]
    return [first, records[1]]


def jsonl_preview(lines: JsonLines, budget: int, count: Callable[[str], int]) -> tuple[str, dict[str, Any]]:
    """(rendered, structuredContent summary) for JSON Lines, from their sampled records."""
    records = lines.sample
    root = OutlineNode(None, (), records, False, 0)
    outline = Outline(root, outline_char_cap(budget))
    what = "objects" if lines.all_objects else "arrays" if lines.all_arrays else "objects and arrays"
    header = f"JSON Lines: {plural(lines.count, 'record')} ({what}); jq filters run once per record"
    shape_title = f"record shape (from {len(records)} sampled records): {outline.describe(root)}"
    examples = jsonl_examples(lines)
    jq_lines = fit_lines(["jq examples (per record):", *(f"  {e}" for e in examples)], budget * 2 // 5, count)
    if len(jq_lines) == 1:
        jq_lines = []
    picked = _pick_samples(records)
    sample_lines: list[str] = []
    for width in (400, 240, 160, 100):
        for how_many in (2, 1):
            candidate = ["sample records:", *(_cut_abbreviation(abbreviate(r), width) for r in picked[:how_many])]
            if count("\n".join(candidate)) <= budget * 7 // 20:
                sample_lines = candidate
                break
        if sample_lines:
            break

    def compose(shown: int, samples: int) -> str:
        body, notes = outline.render_nodes(shown, samples)
        return "\n".join([header, shape_title, *body, *notes_text(notes), *sample_lines, *jq_lines])

    shown, samples = fit_outline(outline, compose, budget, count, samples_allowed=not sample_lines)
    text = compose(shown, samples)
    data: dict[str, Any] = {
        "type": "jsonl",
        "records": lines.count,
        "record_type": "object" if lines.all_objects else "array" if lines.all_arrays else "object|array",
        "keys": {replace_surrogates(c.key or ""): outline.describe(c) for c in root.children(outline)},
        "jq_paths": [line.strip() for line in jq_lines[1:]],
    }
    return text, data


def _cut_abbreviation(text: str, width: int) -> str:
    return "  " + (text if len(text) <= width else f"{text[:width]}… [+{len(text) - width:,} chars]")
