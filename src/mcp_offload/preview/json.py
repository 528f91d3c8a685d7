"""The preview of one JSON document: its outline, then jq examples that run, within the token budget.

The jq examples get up to 2/5 of the budget; the outline is fitted into what the whole rendering leaves. The
structuredContent summary names the type, the top-level keys (or the array's length and element type) and the jq
paths, and says whether the outline left anything out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_offload.preview.fit import fit_lines
from mcp_offload.preview.jq_examples import json_examples
from mcp_offload.preview.outline import (
    Outline,
    OutlineNode,
    describe_values,
    fit_outline,
    jq_type,
    notes_text,
    outline_char_cap,
    sample_elements,
)
from mcp_offload.unicode import replace_surrogates

__all__ = ["json_preview"]


def json_preview(doc: Any, budget: int, count: Callable[[str], int]) -> tuple[str, dict[str, Any]]:
    """(rendered, structuredContent summary) for one JSON document, at most `budget` tokens by `count`."""
    root = OutlineNode(None, (), [doc], True, 0)
    outline = Outline(root, outline_char_cap(budget))
    examples = json_examples(doc, outline)
    jq_lines = fit_lines(["jq examples:", *(f"  {e}" for e in examples)], budget * 2 // 5, count)
    if len(jq_lines) == 1:
        jq_lines = []

    def compose(shown: int, samples: int) -> str:
        body, notes = outline.render_nodes(shown, samples)
        header = outline.header(shown, notes)
        return "\n".join([header, *body, *notes_text(notes), *jq_lines])

    shown, samples = fit_outline(outline, compose, budget, count)
    text = compose(shown, samples)
    data: dict[str, Any] = {"type": jq_type(doc), "jq_paths": [line.strip() for line in jq_lines[1:]]}
    if doc.__class__ is dict:
        data["keys"] = {replace_surrogates(c.key or ""): outline.describe(c) for c in root.children(outline)}
        data["key_count"] = len(doc)
    elif doc.__class__ is list:
        data["length"] = len(doc)
        data["element"] = describe_values(sample_elements([doc]), False) if doc else None
    data["outline_truncated"] = outline.truncated(shown)
    return text, data
