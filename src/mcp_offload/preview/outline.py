"""The outline of a JSON value: its shape (types, keys, array lengths, sample values), fitted to a token budget.

The outline describes every position of the document (a key, or every element of an array below a key) on one
line: the types seen there, keys that are sometimes missing (`?`), array lengths and one sample value. Long arrays
are described from a sample of their elements, and objects from the union of their keys. Lines are discovered
breadth first (shallow structure before deep structure), so any prefix of that order renders a coherent outline;
`fit_outline` picks the prefix, and which lines keep their sample values, that fits the budget: sample values are
the first thing given up. The JSON Lines preview describes its sampled records with the same outline.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import Any

from mcp_offload.preview.fit import largest, plural
from mcp_offload.preview.jq_syntax import ITER

__all__ = [
    "ITER",
    "KEYS_SCANNED",
    "STRING_CUT",
    "Outline",
    "OutlineNode",
    "abbreviate",
    "describe_values",
    "fit_outline",
    "jq_type",
    "notes_text",
    "outline_char_cap",
    "sample_elements",
    "spread",
]

_SAMPLED = 128  # values summarised per position
_SAMPLED_HEAD = 64  # of which the first ones; the rest are spread evenly over a long array
KEYS_SCANNED = 200  # keys per object looked at for the union of keys
_ROOT_KEYS = 40  # keys listed per object at most (top level / nested)
_NESTED_KEYS = 25
_MAX_DEPTH = 12  # outline levels
_MAX_NODES = 400
_WORK_LIMIT = 200_000  # key visits; past it, unions are taken over fewer objects
STRING_CUT = 40
_KEY_CUT = 60
_ARRAY_NESTING = 4  # "array of array of …" levels described


def jq_type(value: Any) -> str:
    """The type name jq gives a parsed JSON value."""
    cls = value.__class__
    if value is None:
        return "null"
    if cls is bool:
        return "boolean"
    if cls is dict:
        return "object"
    if cls is list:
        return "array"
    if cls is str:
        return "string"
    return "number"


def spread(n: int) -> range | list[int]:
    """Indices sampled from an array of `n`: all of a short one, else the first ones then evenly spread."""
    if n <= _SAMPLED:
        return range(n)
    rest = _SAMPLED - _SAMPLED_HEAD
    step = (n - _SAMPLED_HEAD) / rest
    return [*range(_SAMPLED_HEAD), *(_SAMPLED_HEAD + int(i * step) for i in range(rest))]


def sample_elements(arrays: list[list[Any]]) -> list[Any]:
    """Elements sampled from the arrays seen at one position."""
    if len(arrays) == 1:
        only = arrays[0]
        return [only[i] for i in spread(len(only))]
    out: list[Any] = []
    per = max(2, _SAMPLED // max(1, len(arrays)))
    for k, array in enumerate(arrays):
        n = len(array)
        if n <= per:
            out.extend(array)
        else:  # a window that moves from array to array, so every position of tuple-like arrays gets seen
            start = k * per % n
            out.extend(array[(start + j) % n] for j in range(per))
        if len(out) >= _SAMPLED:
            break
    return out[:_SAMPLED]


def _type_counts(values: list[Any]) -> list[str]:
    counts: dict[str, int] = {}
    for value in values:
        name = jq_type(value)
        counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda name: -counts[name])
    if "array" in counts and len(names) > 1:  # last, so that "… of X" reads unambiguously
        names.remove("array")
        names.append("array")
    return names


def describe_values(values: list[Any], exact: bool, nesting: int = 0) -> str:
    parts = []
    for name in _type_counts(values):
        if name != "array":
            parts.append(name)
            continue
        arrays = [v for v in values if v.__class__ is list]
        lengths = [len(a) for a in arrays]
        low, high = min(lengths), max(lengths)
        desc = f"array[{low}]" if low == high else f"array[{low}..{high}]"
        if high:
            if nesting >= _ARRAY_NESTING:
                desc += " of …"
            else:
                inner = describe_values(sample_elements(arrays), False, nesting + 1)
                desc += f" of ({inner})" if "|" in inner else f" of {inner}"
        parts.append(desc)
    return "|".join(parts)


def _scalar_sample(values: list[Any]) -> tuple[bool, Any]:
    """The first non-null scalar at this position, looking into arrays of scalars too."""
    for _ in range(_ARRAY_NESTING + 1):
        arrays = []
        for value in values:
            cls = value.__class__
            if cls is list:
                arrays.append(value)
            elif value is not None and cls is not dict:
                return True, value
        if not arrays:
            break
        values = sample_elements(arrays)
    return False, None


def _show_scalar(value: Any, cut: int = STRING_CUT) -> str:
    if value.__class__ is str and len(value) > cut:
        return f"{json.dumps(value[:cut], ensure_ascii=False)}… [+{len(value) - cut:,} chars]"
    if value.__class__ is float and value != value:  # only reachable from a caller-supplied value
        return "NaN"
    return json.dumps(value, ensure_ascii=False)


def _show_key(key: str) -> str:
    if len(key) > _KEY_CUT:
        return json.dumps(key[:_KEY_CUT], ensure_ascii=False)[:-1] + '…"'
    return json.dumps(key, ensure_ascii=False)


class OutlineNode:
    """One line of the outline: a key (or the root) and every value seen there."""

    __slots__ = ("_children", "depth", "exact", "index", "key", "optional", "path", "total_keys", "values")

    def __init__(self, key: str | None, path: tuple[Any, ...], values: list[Any], exact: bool, depth: int) -> None:
        self.key = key
        self.path = path
        self.values = values
        self.exact = exact  # one concrete location, so values == [the value]
        self.depth = depth
        self.optional = False  # the key is missing in some of the sampled objects
        self.index = -1  # position in breadth-first order
        self.total_keys = 0
        self._children: list[OutlineNode] | None = None

    def children(self, outline: Outline) -> list[OutlineNode]:
        if self._children is None:
            self._children = outline.child_nodes(self)
        return self._children


def _objects_below(values: list[Any]) -> tuple[list[dict[str, Any]], tuple[Any, ...]]:
    """The objects whose keys are listed under a position, and the [] steps from the position to them."""
    objects = [v for v in values if v.__class__ is dict]
    suffix: tuple[Any, ...] = ()
    arrays = [v for v in values if v.__class__ is list]
    while not objects and arrays and len(suffix) < _ARRAY_NESTING:
        elements = sample_elements(arrays)
        suffix += (ITER,)
        objects = [v for v in elements if v.__class__ is dict]
        arrays = [v for v in elements if v.__class__ is list]
    return objects, suffix if objects else ()


class Outline:
    """The document's shape as a tree of lines, discovered breadth first and rendered for any prefix of that order."""

    def __init__(self, root: OutlineNode, char_cap: int) -> None:
        self.root = root
        self.work = 0
        self.order: list[OutlineNode] = []
        self._desc: dict[int, str] = {}
        queue = deque([root])
        chars = 0
        while queue and len(self.order) < _MAX_NODES and chars < char_cap:
            node = queue.popleft()
            if node.depth >= _MAX_DEPTH:
                continue
            for child in node.children(self):
                child.index = len(self.order)
                self.order.append(child)
                queue.append(child)
                chars += 2 * child.depth + len(_show_key(child.key or "")) + len(self.describe(child)) + 4

    def describe(self, node: OutlineNode) -> str:
        desc = self._desc.get(id(node))
        if desc is None:
            desc = self._desc[id(node)] = describe_values(node.values, node.exact)
        return desc

    def child_nodes(self, node: OutlineNode) -> list[OutlineNode]:
        objects, suffix = _objects_below(node.values)
        if not objects:
            return []
        if self.work > _WORK_LIMIT:
            objects = objects[:8]
        exact = node.exact and not suffix and len(objects) == 1
        union: dict[str, list[Any]] = {}
        seen: dict[str, int] = {}
        for obj in objects:
            for key, value in islice(obj.items(), KEYS_SCANNED):
                bucket = union.get(key)
                if bucket is None:
                    union[key] = bucket = []
                    seen[key] = 0
                seen[key] += 1
                if len(bucket) < _SAMPLED:
                    bucket.append(value)
            self.work += min(len(obj), KEYS_SCANNED)
        node.total_keys = len(objects[0]) if exact else len(union)
        cap = _ROOT_KEYS if node.depth == 0 else _NESTED_KEYS
        out = []
        for key in islice(union, cap):
            child = OutlineNode(key, (*node.path, *suffix, key), union[key], exact, node.depth + 1)
            child.optional = seen[key] < len(objects)
            out.append(child)
        return out

    # -- rendering ---------------------------------------------------------------------------------------------
    def header(self, shown: int, notes: set[str]) -> str:
        """The first line: the document's type, with its key count or (for a scalar) its value."""
        doc = self.root.values[0]
        line = f"JSON {self.describe(self.root)}"
        if doc.__class__ is dict:
            return line + (f" ({plural(len(doc), 'key')})" if doc else " (empty)")
        if doc.__class__ is list:
            children = self.root.children(self)
            if children and not 0 <= children[0].index < shown:
                line += f" ({plural(self.root.total_keys, 'key')})"
            elif not children and doc:
                line += f"  first: {abbreviate(doc)}"
            if len(doc) > _SAMPLED:
                notes.add("sampled")
            return line
        return f"{line} = {_show_scalar(doc, 400)}"

    def truncated(self, shown: int) -> bool:
        """Whether the outline leaves anything out: nodes not shown, keys over the cap, levels not walked."""
        if shown < len(self.order):
            return True
        for node in (self.root, *self.order):
            kids = node.children(self)
            if node.total_keys > sum(1 for kid in kids if 0 <= kid.index < shown):
                return True
        return False

    def render_nodes(self, shown: int, samples: int) -> tuple[list[str], set[str]]:
        """Lines for the first `shown` nodes in breadth-first order, with sample values on the first `samples`."""
        lines: list[str] = []
        notes: set[str] = set()
        stack: list[tuple[OutlineNode, int]] = [(self.root, 0)]
        while stack:
            node, i = stack.pop()
            children = node._children or []
            if i < len(children) and children[i].index < shown and children[i].index >= 0:
                child = children[i]
                stack.append((node, i + 1))
                lines.append(self._line(child, shown, child.index < samples, notes))
                stack.append((child, 0))
            elif i and (more := node.total_keys - i) > 0:
                lines.append(f"{'  ' * (node.depth + 1)}… +{plural(more, 'more key')}")
        return lines, notes

    def _line(self, node: OutlineNode, shown: int, sample: bool, notes: set[str]) -> str:
        desc = self.describe(node)
        mark = "?" if node.optional else ""
        if node.optional:
            notes.add("optional")
        line = f"{'  ' * node.depth}{_show_key(node.key or '')}{mark}: {desc}"
        kids = node._children or []
        expanded = bool(kids) and 0 <= kids[0].index < shown
        if not expanded and ("object" in desc):
            node.children(self)
            line += f" ({plural(node.total_keys, 'key')})" if node.total_keys else " (empty)"
        if node.exact and any(v.__class__ is list and len(v) > _SAMPLED for v in node.values):
            notes.add("sampled")
        if sample:
            found, value = _scalar_sample(node.values)
            if found:
                scalar_here = all(v.__class__ not in (dict, list) for v in node.values)
                line += f" = {_show_scalar(value)}" if node.exact and scalar_here else f"  e.g. {_show_scalar(value)}"
        return line


def notes_text(notes: set[str]) -> list[str]:
    parts = []
    if "optional" in notes:
        parts.append("? = key missing in some elements")
    if "sampled" in notes:
        parts.append(f"long arrays described from {_SAMPLED} sampled elements")
    return [f"({'; '.join(parts)})"] if parts else []


def fit_outline(
    outline: Outline,
    compose: Callable[[int, int], str],
    budget: int,
    count: Callable[[str], int],
    samples_allowed: bool = True,
) -> tuple[int, int]:
    """(nodes shown, nodes with samples): everything if it fits, else structure first (3/4 of the budget)."""
    total = len(outline.order)
    max_samples = total if samples_allowed else 0

    def fits(shown: int, samples: int, limit: int = budget) -> bool:
        return count(compose(shown, samples)) <= limit

    if fits(total, max_samples):
        return total, max_samples
    if fits(total, 0):
        return total, largest(0, max_samples, lambda m: fits(total, m))
    shown = max(0, largest(0, total, lambda k: fits(k, 0, budget * 3 // 4)))
    samples = max(0, largest(0, min(shown, max_samples), lambda m: fits(shown, m)))
    shown = max(shown, largest(shown, total, lambda k: fits(k, samples)))
    return shown, samples


def outline_char_cap(budget: int) -> int:
    """How many characters of outline to discover for a budget (more than can fit: fitting picks a prefix)."""
    return max(2000, budget * 16)


def abbreviate(value: Any, depth: int = 0) -> str:
    """A one-line, shortened rendering of a value: strings cut, at most 8 keys / 4 items, 2 levels."""
    cls = value.__class__
    if cls is dict:
        if not value:
            return "{}"
        if depth >= 2:
            return f"{{…{len(value)} keys}}"
        parts = [f"{_show_key(k)}: {abbreviate(v, depth + 1)}" for k, v in islice(value.items(), 8)]
        if len(value) > 8:
            parts.append(f"…+{len(value) - 8} keys")
        return "{" + ", ".join(parts) + "}"
    if cls is list:
        if not value:
            return "[]"
        if depth >= 2:
            return f"[…{len(value)} items]"
        parts = [abbreviate(v, depth + 1) for v in value[:4]]
        if len(value) > 4:
            parts.append(f"…+{len(value) - 4} items")
        return "[" + ", ".join(parts) + "]"
    return _show_scalar(value)
