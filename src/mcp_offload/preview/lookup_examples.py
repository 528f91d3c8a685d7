"""jq examples that find one thing: a record by its id, a node of a tree by its name, with values from the document.

A preview that only shows shape leaves the model to write the lookup it came for. So for an array of records (or
JSON Lines) with an id-like field (`id`, `uuid`, `key`, `number`, `slug`, `name`, `login`, `*_id`, …) that holds a
distinct string or integer in every sampled record, the examples select one real record by it
(`.items[] | select(.id == 4000)`); and for a tree (objects with a name-like field and a `children`, `items`,
`nodes` or `entries` array of objects of the same shape, at least two levels deep, as server-filesystem's
`directory_tree` returns), they find a real node by name anywhere in it: its paths, `[paths(objects and .name ==
"plan.md")]`, and the node itself. Every value is taken from the document, so every example yields something.
"""

from __future__ import annotations

import re
from collections import deque
from itertools import islice
from typing import Any

from mcp_offload.preview.jq_syntax import jq_field, jq_literal
from mcp_offload.unicode import encodes_as_utf8

__all__ = ["id_select", "pick_id_field", "tree_examples"]

_ID_KEYS = ("id", "uuid", "key", "number", "slug", "name", "login")
_ID_SUFFIX = re.compile(r"(?i:[_-](?:id|uuid|key))\Z|[a-z0-9](?:Id|ID|Uuid|Key)\Z")  # order_id, orderId; not "paid"
_CHILD_KEYS = ("children", "items", "nodes", "entries")
_TREE_NAME_KEYS = ("name", "title", "path", "label", "key", "id")
_VALUE_CUT = 40  # longest string value shown in an example
_SAFE_INT = 2**53  # jq compares numbers as doubles
_KEYS_LOOKED_AT = 200
_TREE_SEARCH_VISITS = 2_000  # containers looked at to find a tree
_TREE_WALK_VISITS = 5_000  # nodes walked to pick a deep name
_KIDS_WALKED = 1_000  # children of one node looked at


def _id_value(value: object) -> str | int | None:
    """`value` when it can stand in an example's `select(.id == …)`: an exact integer or a short, sendable string."""
    if value.__class__ is int and isinstance(value, int):
        return value if -_SAFE_INT < value < _SAFE_INT else None
    if isinstance(value, str) and 0 < len(value) <= _VALUE_CUT and encodes_as_utf8(value):
        return value
    return None


def pick_id_field(records: list[Any]) -> tuple[str, str | int] | None:
    """(key, a real value) of the first id-like field every sampled object has, distinct in each; else None.

    The value is the middle record's: a real one that is neither the first nor the last.
    """
    objects = [r for r in records if r.__class__ is dict]
    if len(objects) < 2 or len(objects) < len(records):
        return None
    first = objects[0]
    keys = [k for k in islice(first, _KEYS_LOOKED_AT) if encodes_as_utf8(k)]
    named = [k for k in _ID_KEYS if k in first]
    suffixed = [k for k in keys if k not in named and _ID_SUFFIX.search(k)]
    for key in (*named, *suffixed):
        values = [_id_value(o.get(key)) for o in objects]
        if any(v is None for v in values):
            continue
        if len({(v.__class__, v) for v in values}) == len(values):
            middle = values[len(values) // 2]
            if middle is not None:
                return key, middle
    return None


def id_select(each: str, records: list[Any]) -> str | None:
    """`<each> | select(.id == <value>)` for an id-like field of `records` (all objects), else None.

    `each` is the filter that yields the records (`.items[]`), or "" for JSON Lines (`select(...)` alone).
    """
    picked = pick_id_field(records)
    if picked is None:
        return None
    key, value = picked
    select = f"select({jq_field(key, True)} == {jq_literal(value)})"
    return f"{each} | {select}" if each else select


def _tree_shape(node: dict[str, Any]) -> tuple[str, str] | None:
    """(name key, children key) when `node` is a tree node with a grandchild of the same shape."""
    for child_key in _CHILD_KEYS:
        kids = node.get(child_key)
        if kids.__class__ is not list or not kids:
            continue
        for name_key in _TREE_NAME_KEYS:
            if node.get(name_key).__class__ is not str:
                continue
            for kid in islice(kids, 64):
                if kid.__class__ is dict and kid.get(name_key).__class__ is str:
                    grandkids = kid.get(child_key)
                    if grandkids.__class__ is list and any(
                        g.__class__ is dict and g.get(name_key).__class__ is str for g in islice(grandkids, 64)
                    ):
                        return name_key, child_key
    return None


def _find_tree(doc: Any) -> tuple[dict[str, Any], str, str] | None:
    """The first tree node (breadth first, a bounded number of containers looked at) and its keys."""
    queue: deque[Any] = deque([doc])
    visits = 0
    while queue and visits < _TREE_SEARCH_VISITS:
        value = queue.popleft()
        visits += 1
        if value.__class__ is dict:
            shape = _tree_shape(value)
            if shape is not None:
                return value, *shape
            queue.extend(v for v in islice(value.values(), _KEYS_LOOKED_AT) if v.__class__ in (dict, list))
        elif value.__class__ is list:
            queue.extend(v for v in islice(value, 64) if v.__class__ in (dict, list))
    return None


def _deep_name(root: dict[str, Any], name_key: str, child_key: str) -> str | None:
    """A usable name of one of the deepest leaves reached (bounded walk), else of the deepest node."""
    best: tuple[int, int, str] | None = None  # (depth, is a leaf, name)
    stack: list[tuple[dict[str, Any], int]] = [(root, 0)]
    visits = 0
    while stack and visits < _TREE_WALK_VISITS:
        node, depth = stack.pop()
        visits += 1
        name = node.get(name_key)
        kids = node.get(child_key)
        kids = [k for k in islice(kids, _KIDS_WALKED) if k.__class__ is dict] if kids.__class__ is list else []
        if name.__class__ is str and 0 < len(name) <= _VALUE_CUT and encodes_as_utf8(name):
            rank = (depth, 0 if kids else 1, name)
            if best is None or rank[:2] > best[:2]:
                best = rank
        stack.extend((kid, depth + 1) for kid in reversed(kids))
    return best[2] if best else None


def tree_examples(doc: Any) -> list[str]:
    """For a tree of named nodes: where a real node is (its paths), and the node itself; else []."""
    found = _find_tree(doc)
    if found is None:
        return []
    root, name_key, child_key = found
    name = _deep_name(root, name_key, child_key)
    if name is None:
        return []
    test = f"{jq_field(name_key, True)} == {jq_literal(name)}"
    return [f"[paths(objects and {test})]", f".. | objects | select({test})"]
