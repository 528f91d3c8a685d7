"""jq examples that run: filters built from the document itself, each checked against it before it is shown.

For JSON, the main array (the longest one at a fixed path, arrays of objects first) gets `length`, one element's
field, a `select()` on a category-like field (status, level, …), a projection and a `select()` of one record by an
id-like field; a tree of named nodes gets, right after the first two, how to find a node by name anywhere
(lookup_examples.py); then plain paths to scalars. For JSON Lines, the filters run once per record: a field every
sampled record has, a `select()`, a projection and a `select()` of one record by an id-like field.
Keys are spelled the way jq 1.6 and 1.7 both accept, and keys jq cannot name (lone surrogates) get no path; plain
paths are resolved in the document and dropped unless they reach a non-null value.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

from mcp_offload.preview.jq_syntax import jq_field, jq_path, parse_plain_path, projection
from mcp_offload.preview.kinds import JsonLines
from mcp_offload.preview.lookup_examples import id_select, tree_examples
from mcp_offload.preview.outline import KEYS_SCANNED, STRING_CUT, Outline, spread
from mcp_offload.unicode import encodes_as_utf8

__all__ = ["json_examples", "jsonl_examples"]

_NAME_KEYS = ("name", "title", "id", "key", "slug", "login", "email", "path", "url", "label")
_CATEGORY_KEYS = ("status", "state", "level", "severity", "type", "kind", "category", "result", "outcome")
_INTERESTING_VALUES = ("error", "failed", "failure", "fatal", "critical", "warning", "warn")
_MAX_JQ = 6


def _resolve(doc: Any, path: tuple[Any, ...]) -> tuple[bool, Any]:
    value = doc
    for step in path:
        if isinstance(step, int):
            if value.__class__ is not list or not -len(value) <= step < len(value):
                return False, None
        elif value.__class__ is not dict or step not in value:
            return False, None
        value = value[step]
    return True, value


def _pick_name_key(obj: dict[str, Any]) -> str | None:
    usable = [k for k, v in obj.items() if v is not None and encodes_as_utf8(k)]
    for wanted in _NAME_KEYS:
        if wanted in usable and obj[wanted].__class__ not in (dict, list):
            return wanted
    for key in usable:
        if obj[key].__class__ not in (dict, list):
            return key
    return usable[0] if usable else None


def _pick_category(records: list[dict[str, Any]]) -> tuple[str, str] | None:
    """A string field with few distinct values (status, level, …) and one value that occurs: for select()."""
    if len(records) < 2:
        return None
    values: dict[str, dict[str, int]] = {}
    for record in records:
        for key, value in islice(record.items(), KEYS_SCANNED):
            if value.__class__ is str and len(value) <= STRING_CUT and encodes_as_utf8(key) and encodes_as_utf8(value):
                values.setdefault(key, {})
                values[key][value] = values[key].get(value, 0) + 1
    candidates = []
    for key, counts in values.items():
        seen = sum(counts.values())
        low_cardinality = len(counts) <= 8 and len(counts) < seen
        if low_cardinality or (key.lower() in _CATEGORY_KEYS and seen >= 2):
            named = key.lower() in _CATEGORY_KEYS
            candidates.append((not named, -seen, key))
    if not candidates:
        return None
    key = min(candidates)[2]
    counts = values[key]
    for wanted in _INTERESTING_VALUES:
        if wanted in counts:
            return key, wanted
    return key, min(counts, key=lambda v: counts[v])  # the rarest: filtering is for finding the few


def _common_keys(records: list[dict[str, Any]], limit: int, exclude: tuple[str, ...] = ()) -> list[str]:
    """Keys present and non-null in every sampled record."""
    if not records:
        return []
    out = []
    for key in records[0]:
        if key in exclude or not encodes_as_utf8(key):
            continue
        if all(r.get(key) is not None for r in records):
            out.append(key)
            if len(out) >= limit:
                break
    return out


def _element_examples(prefix: str, array: list[Any], elements: list[Any]) -> list[str]:
    """Examples for an array's elements: one element's field, select() on a category field, a projection."""
    out: list[str] = []
    first = array[0]
    if first.__class__ is dict:
        key = _pick_name_key(first)
        if key is not None:
            out.append(f"{prefix}[0]{jq_field(key, False)}")  # "." + "[0]" is right for the root too
    elif first is not None:
        out.append(f"{prefix}[0]")
    objects = [e for e in elements if e.__class__ is dict]
    if not objects:
        return out
    all_objects = set(map(type, array)) == {dict}  # exact, at C speed (~30 ms for 1M elements)
    each = f"{prefix}[]" if all_objects else f"{prefix}[] | objects"
    category = _pick_category(objects)
    if category is not None:
        key, value = category
        out.append(f"{each} | select({jq_field(key, True)} == {json.dumps(value, ensure_ascii=False)})")
    keys = _common_keys(objects, 3)
    if len(keys) >= 2:
        out.append(f"{each} | {projection(keys)}")
    by_id = id_select(each, objects)
    if by_id is not None:
        out.append(by_id)
    return out


def json_examples(doc: Any, outline: Outline) -> list[str]:
    """Paths for the main array (the longest one at a fixed path, arrays of objects first), then scalar paths."""
    examples: list[str] = []
    main: tuple[tuple[Any, ...], list[Any]] | None = None
    if doc.__class__ is list and doc:
        main = ((), doc)
    else:
        best = (False, 0)
        for node in outline.order[:200]:
            array = node.values[0]
            if node.exact and array.__class__ is list and array:
                rank = (array[0].__class__ is dict, len(array))
                if rank > best:
                    best, main = rank, (node.path, array)
    if main is not None:
        path, array = main
        prefix = jq_path(path)
        if prefix is not None:
            examples.append("length" if prefix == "." else f"{prefix} | length")
            sampled = [array[i] for i in spread(len(array))]
            examples.extend(_element_examples(prefix, array, sampled))
    examples[2:2] = tree_examples(doc)
    for node in outline.order:
        if len(examples) >= _MAX_JQ:
            break
        if not node.exact:
            continue
        value = node.values[0]
        if value is None or value.__class__ in (dict, list):
            continue
        scalar_path = jq_path(node.path)
        if scalar_path is not None and scalar_path not in examples:
            examples.append(scalar_path)
    return [e for e in examples[:_MAX_JQ] if _jq_checked(doc, e)]


def _jq_checked(doc: Any, example: str) -> bool:
    """Guard for plain paths (no pipes): they must resolve to a non-null value in the document.

    Filters (pipes, `length`, the tree lookups' `[paths(…)]`) are built from values found in the document.
    """
    if "|" in example or example == "length" or example.startswith("[paths("):
        return True
    steps = parse_plain_path(example)
    if steps is None:
        return False
    found, value = _resolve(doc, steps)
    return found and value is not None


def jsonl_examples(lines: JsonLines) -> list[str]:
    """Per-record filters: a field every sampled record has, select() on a category field, a projection."""
    records = [r for r in lines.sample if r.__class__ is dict]
    if lines.all_arrays:
        firsts_ok = all(r and r[0] is not None for r in lines.sample)
        return ["length", ".[0]"] if firsts_ok else ["length"]
    if not records:
        return []
    lead = "" if lines.all_objects else "objects | "
    common = _common_keys(records, 50)
    category = _pick_category(records)
    out: list[str] = []
    if category is not None and category[0] in common:
        out.append(f"{lead}{jq_field(category[0], True)}")
    else:
        name = next((k for k in _NAME_KEYS if k in common), common[0] if common else None)
        if name is not None:
            out.append(f"{lead}{jq_field(name, True)}")
    if category is not None:
        key, value = category
        matching = [r for r in records if r.get(key) == value]
        others = _common_keys(matching, 1, exclude=(key,))
        select = f"{lead}select({jq_field(key, True)} == {json.dumps(value, ensure_ascii=False)})"
        out.append(f"{select} | {jq_field(others[0], True)}" if others else select)
    if len(common) >= 2:
        out.append(f"{lead}{projection(common[:3])}")
    by_id = id_select("", records)
    if by_id is not None:
        out.append(f"{lead}{by_id}")
    return out[:_MAX_JQ]
