"""The JSON preview: the document's outline (shape) and jq examples that run, fitted to a token budget.

- JSON: the *shape* (types, keys, array lengths, one sample value per position, keys that are sometimes missing)
  and jq paths built from the document itself, so each of them runs and returns something;
- JSON Lines: the record count and record shape, two abbreviated sample records and per-record jq filters.

Long arrays are described from a sample of their elements. The outline is expanded breadth first (shallow
structure before deep structure) and fitted to the budget with the caller's counter; sample values are the first
thing given up. The fitting primitives (`largest`, `plural`, `replace_surrogates`) are shared with the text preview.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable
from itertools import islice
from typing import Any

from mcp_offload.kinds import JsonLines

__all__ = ["json_preview", "jsonl_preview", "largest", "plural", "replace_surrogates"]

# --------------------------------------------------------------------------------------------------------------
# Fitting and rendering primitives (also used by the text preview)
# --------------------------------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """Lone surrogates cannot go over the wire (UTF-8); show each as U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


def plural(n: int, word: str) -> str:
    """A count and its noun: 1 line, 2,000 lines."""
    return f"{n:,} {word}" if n == 1 else f"{n:,} {word}s"


def largest(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """The largest x in [lo, hi] seen to fit by binary search (lo - 1 when not even lo fits)."""
    best = lo - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


# --------------------------------------------------------------------------------------------------------------
# JSON shape
# --------------------------------------------------------------------------------------------------------------

_SAMPLED = 128  # values summarised per position
_SAMPLED_HEAD = 64  # of which the first ones; the rest are spread evenly over a long array
_KEYS_SCANNED = 200  # keys per object looked at for the union of keys
_ROOT_KEYS = 40  # keys listed per object at most (top level / nested)
_NESTED_KEYS = 25
_MAX_DEPTH = 12  # outline levels
_MAX_NODES = 400
_WORK_LIMIT = 200_000  # key visits; past it, unions are taken over fewer objects
_STRING_CUT = 40
_KEY_CUT = 60
_ARRAY_NESTING = 4  # "array of array of …" levels described
_ITER = None  # a path segment meaning "every element" ([])


def _jq_type(value: Any) -> str:
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


def _spread(n: int) -> range | list[int]:
    if n <= _SAMPLED:
        return range(n)
    rest = _SAMPLED - _SAMPLED_HEAD
    step = (n - _SAMPLED_HEAD) / rest
    return [*range(_SAMPLED_HEAD), *(_SAMPLED_HEAD + int(i * step) for i in range(rest))]


def _elements(arrays: list[list[Any]]) -> list[Any]:
    """Elements sampled from the arrays seen at one position."""
    if len(arrays) == 1:
        only = arrays[0]
        return [only[i] for i in _spread(len(only))]
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
        name = _jq_type(value)
        counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda name: -counts[name])
    if "array" in counts and len(names) > 1:  # last, so that "… of X" reads unambiguously
        names.remove("array")
        names.append("array")
    return names


def _describe(values: list[Any], exact: bool, nesting: int = 0) -> str:
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
                inner = _describe(_elements(arrays), False, nesting + 1)
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
        values = _elements(arrays)
    return False, None


def _show_scalar(value: Any, cut: int = _STRING_CUT) -> str:
    if value.__class__ is str and len(value) > cut:
        return f"{json.dumps(value[:cut], ensure_ascii=False)}… [+{len(value) - cut:,} chars]"
    if value.__class__ is float and value != value:  # only reachable from a caller-supplied value
        return "NaN"
    return json.dumps(value, ensure_ascii=False)


def _show_key(key: str) -> str:
    if len(key) > _KEY_CUT:
        return json.dumps(key[:_KEY_CUT], ensure_ascii=False)[:-1] + '…"'
    return json.dumps(key, ensure_ascii=False)


class _Node:
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
        self._children: list[_Node] | None = None

    def children(self, outline: _Outline) -> list[_Node]:
        if self._children is None:
            self._children = outline.child_nodes(self)
        return self._children


def _objects_below(values: list[Any]) -> tuple[list[dict[str, Any]], tuple[Any, ...]]:
    """The objects whose keys are listed under a position, and the [] steps from the position to them."""
    objects = [v for v in values if v.__class__ is dict]
    suffix: tuple[Any, ...] = ()
    arrays = [v for v in values if v.__class__ is list]
    while not objects and arrays and len(suffix) < _ARRAY_NESTING:
        elements = _elements(arrays)
        suffix += (_ITER,)
        objects = [v for v in elements if v.__class__ is dict]
        arrays = [v for v in elements if v.__class__ is list]
    return objects, suffix if objects else ()


class _Outline:
    """The document's shape as a tree of lines, discovered breadth first and rendered for any prefix of that order."""

    def __init__(self, root: _Node, char_cap: int) -> None:
        self.root = root
        self.work = 0
        self.order: list[_Node] = []
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

    def describe(self, node: _Node) -> str:
        desc = self._desc.get(id(node))
        if desc is None:
            desc = self._desc[id(node)] = _describe(node.values, node.exact)
        return desc

    def child_nodes(self, node: _Node) -> list[_Node]:
        objects, suffix = _objects_below(node.values)
        if not objects:
            return []
        if self.work > _WORK_LIMIT:
            objects = objects[:8]
        exact = node.exact and not suffix and len(objects) == 1
        union: dict[str, list[Any]] = {}
        seen: dict[str, int] = {}
        for obj in objects:
            for key, value in islice(obj.items(), _KEYS_SCANNED):
                bucket = union.get(key)
                if bucket is None:
                    union[key] = bucket = []
                    seen[key] = 0
                seen[key] += 1
                if len(bucket) < _SAMPLED:
                    bucket.append(value)
            self.work += min(len(obj), _KEYS_SCANNED)
        node.total_keys = len(objects[0]) if exact else len(union)
        cap = _ROOT_KEYS if node.depth == 0 else _NESTED_KEYS
        out = []
        for key in islice(union, cap):
            child = _Node(key, (*node.path, *suffix, key), union[key], exact, node.depth + 1)
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
                line += f"  first: {_abbreviate(doc)}"
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
        stack: list[tuple[_Node, int]] = [(self.root, 0)]
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

    def _line(self, node: _Node, shown: int, sample: bool, notes: set[str]) -> str:
        desc = self.describe(node)
        mark = "?" if node.optional else ""
        if node.optional:
            notes.add("optional")
        line = f"{'  ' * node.depth}{_show_key(node.key or '')}{mark}: {desc}"
        kids = node._children
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


def _notes_text(notes: set[str]) -> list[str]:
    parts = []
    if "optional" in notes:
        parts.append("? = key missing in some elements")
    if "sampled" in notes:
        parts.append(f"long arrays described from {_SAMPLED} sampled elements")
    return [f"({'; '.join(parts)})"] if parts else []


def _fit_outline(
    outline: _Outline,
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


# --------------------------------------------------------------------------------------------------------------
# jq paths
# --------------------------------------------------------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JQ_KEYWORDS = frozenset(
    {
        *("and", "as", "break", "catch", "def", "elif", "else", "end", "foreach", "if", "import", "include"),
        *("label", "or", "reduce", "then", "try", "__loc__"),
    }
)
_NAME_KEYS = ("name", "title", "id", "key", "slug", "login", "email", "path", "url", "label")
_CATEGORY_KEYS = ("status", "state", "level", "severity", "type", "kind", "category", "result", "outcome")
_INTERESTING_VALUES = ("error", "failed", "failure", "fatal", "critical", "warning", "warn")
_MAX_JQ = 5


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _jq_field(key: str, first: bool) -> str:
    """`.key` for plain identifiers, else `["key"]` (`.["key"]` first): the forms jq 1.6 and 1.7 both accept."""
    if _IDENT.match(key) and key not in _JQ_KEYWORDS:
        return f".{key}"
    quoted = json.dumps(key, ensure_ascii=False)
    return f".[{quoted}]" if first else f"[{quoted}]"


def _jq_path(path: tuple[Any, ...]) -> str | None:
    out = ""
    for step in path:
        if step is _ITER:
            out += ".[]" if not out else "[]"
        elif isinstance(step, int):
            out += f".[{step}]" if not out else f"[{step}]"
        elif not _encodable(step):
            return None  # jq sees lone surrogates as U+FFFD: no path can name such a key
        else:
            out += _jq_field(step, not out)
    return out or "."


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
    usable = [k for k, v in obj.items() if v is not None and _encodable(k)]
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
        for key, value in islice(record.items(), _KEYS_SCANNED):
            if value.__class__ is str and len(value) <= _STRING_CUT and _encodable(key) and _encodable(value):
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


def _projection(keys: list[str]) -> str:
    """`{a, b}`; keys that are not identifiers spelled out: `{"a-b": .["a-b"]}`."""
    parts = []
    for key in keys:
        if _IDENT.match(key) and key not in _JQ_KEYWORDS:
            parts.append(key)
        else:
            quoted = json.dumps(key, ensure_ascii=False)
            parts.append(f"{quoted}: .[{quoted}]")
    return "{" + ", ".join(parts) + "}"


def _common_keys(records: list[dict[str, Any]], limit: int, exclude: tuple[str, ...] = ()) -> list[str]:
    """Keys present and non-null in every sampled record."""
    if not records:
        return []
    out = []
    for key in records[0]:
        if key in exclude or not _encodable(key):
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
            out.append(f"{prefix}[0]{_jq_field(key, False)}")  # "." + "[0]" is right for the root too
    elif first is not None:
        out.append(f"{prefix}[0]")
    objects = [e for e in elements if e.__class__ is dict]
    if not objects:
        return out
    all_objects = all(e.__class__ is dict for e in array)
    each = f"{prefix}[]" if all_objects else f"{prefix}[] | objects"
    category = _pick_category(objects)
    if category is not None:
        key, value = category
        out.append(f"{each} | select({_jq_field(key, True)} == {json.dumps(value, ensure_ascii=False)})")
    keys = _common_keys(objects, 3)
    if len(keys) >= 2:
        out.append(f"{each} | {_projection(keys)}")
    return out


def _json_examples(doc: Any, outline: _Outline) -> list[str]:
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
        prefix = _jq_path(path)
        if prefix is not None:
            examples.append("length" if prefix == "." else f"{prefix} | length")
            sampled = [array[i] for i in _spread(len(array))]
            examples.extend(_element_examples(prefix, array, sampled))
    for node in outline.order:
        if len(examples) >= _MAX_JQ:
            break
        if not node.exact:
            continue
        value = node.values[0]
        if value is None or value.__class__ in (dict, list):
            continue
        path = _jq_path(node.path)
        if path is not None and path not in examples:
            examples.append(path)
    return [e for e in examples[:_MAX_JQ] if _jq_checked(doc, e)]


def _jq_checked(doc: Any, example: str) -> bool:
    """Guard for plain paths (no pipes): they must resolve to a non-null value in the document."""
    if "|" in example or example == "length":
        return True
    steps = _parse_plain_path(example)
    if steps is None:
        return False
    found, value = _resolve(doc, steps)
    return found and value is not None


_PLAIN_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\.?\[(-?\d+)\]|\.?\[("(?:[^"\\]|\\.)*")\]')


def _parse_plain_path(path: str) -> tuple[Any, ...] | None:
    steps: list[Any] = []
    pos = 0
    while pos < len(path):
        match = _PLAIN_STEP.match(path, pos)
        if match is None:
            return None
        ident, index, quoted = match.groups()
        steps.append(ident if ident is not None else int(index) if index is not None else json.loads(quoted))
        pos = match.end()
    return tuple(steps)


# --------------------------------------------------------------------------------------------------------------
# JSON and JSON Lines previews
# --------------------------------------------------------------------------------------------------------------


def _char_cap(budget: int) -> int:
    return max(2000, budget * 16)


def _fit_lines(lines: list[str], budget: int, count: Callable[[str], int]) -> list[str]:
    """The longest prefix of `lines` costing at most `budget`."""
    kept = largest(0, len(lines), lambda n: count("\n".join(lines[:n])) <= budget)
    return lines[: max(0, kept)]


def json_preview(doc: Any, budget: int, count: Callable[[str], int]) -> tuple[str, dict[str, Any]]:
    """(rendered, structuredContent summary) for one JSON document, at most `budget` tokens by `count`."""
    root = _Node(None, (), [doc], True, 0)
    outline = _Outline(root, _char_cap(budget))
    examples = _json_examples(doc, outline)
    jq_lines = _fit_lines(["jq examples:", *(f"  {e}" for e in examples)], budget * 2 // 5, count)
    if len(jq_lines) == 1:
        jq_lines = []

    def compose(shown: int, samples: int) -> str:
        body, notes = outline.render_nodes(shown, samples)
        header = outline.header(shown, notes)
        return "\n".join([header, *body, *_notes_text(notes), *jq_lines])

    shown, samples = _fit_outline(outline, compose, budget, count)
    text = compose(shown, samples)
    data: dict[str, Any] = {"type": _jq_type(doc), "jq_paths": [line.strip() for line in jq_lines[1:]]}
    if doc.__class__ is dict:
        data["keys"] = {replace_surrogates(c.key or ""): outline.describe(c) for c in root.children(outline)}
        data["key_count"] = len(doc)
    elif doc.__class__ is list:
        data["length"] = len(doc)
        data["element"] = _describe(_elements([doc]), False) if doc else None
    data["outline_truncated"] = outline.truncated(shown)
    return text, data


def _abbreviate(value: Any, depth: int = 0) -> str:
    """A one-line, shortened rendering of a value: strings cut, at most 8 keys / 4 items, 2 levels."""
    cls = value.__class__
    if cls is dict:
        if not value:
            return "{}"
        if depth >= 2:
            return f"{{…{len(value)} keys}}"
        parts = [f"{_show_key(k)}: {_abbreviate(v, depth + 1)}" for k, v in islice(value.items(), 8)]
        if len(value) > 8:
            parts.append(f"…+{len(value) - 8} keys")
        return "{" + ", ".join(parts) + "}"
    if cls is list:
        if not value:
            return "[]"
        if depth >= 2:
            return f"[…{len(value)} items]"
        parts = [_abbreviate(v, depth + 1) for v in value[:4]]
        if len(value) > 4:
            parts.append(f"…+{len(value) - 4} items")
        return "[" + ", ".join(parts) + "]"
    return _show_scalar(value)


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


def _jsonl_examples(lines: JsonLines) -> list[str]:
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
        out.append(f"{lead}{_jq_field(category[0], True)}")
    else:
        name = next((k for k in _NAME_KEYS if k in common), common[0] if common else None)
        if name is not None:
            out.append(f"{lead}{_jq_field(name, True)}")
    if category is not None:
        key, value = category
        matching = [r for r in records if r.get(key) == value]
        others = _common_keys(matching, 1, exclude=(key,))
        select = f"{lead}select({_jq_field(key, True)} == {json.dumps(value, ensure_ascii=False)})"
        out.append(f"{select} | {_jq_field(others[0], True)}" if others else select)
    if len(common) >= 2:
        out.append(f"{lead}{_projection(common[:3])}")
    return out[:_MAX_JQ]


def jsonl_preview(lines: JsonLines, budget: int, count: Callable[[str], int]) -> tuple[str, dict[str, Any]]:
    """(rendered, structuredContent summary) for JSON Lines, from their sampled records."""
    records = lines.sample
    root = _Node(None, (), records, False, 0)
    outline = _Outline(root, _char_cap(budget))
    what = "objects" if lines.all_objects else "arrays" if lines.all_arrays else "objects and arrays"
    header = f"JSON Lines: {plural(lines.count, 'record')} ({what}); jq filters run once per record"
    shape_title = f"record shape (from {len(records)} sampled records): {outline.describe(root)}"
    examples = _jsonl_examples(lines)
    jq_lines = _fit_lines(["jq examples (per record):", *(f"  {e}" for e in examples)], budget * 2 // 5, count)
    if len(jq_lines) == 1:
        jq_lines = []
    picked = _pick_samples(records)
    sample_lines: list[str] = []
    for width in (400, 240, 160, 100):
        for how_many in (2, 1):
            candidate = ["sample records:", *(_cut_abbreviation(_abbreviate(r), width) for r in picked[:how_many])]
            if count("\n".join(candidate)) <= budget * 7 // 20:
                sample_lines = candidate
                break
        if sample_lines:
            break

    def compose(shown: int, samples: int) -> str:
        body, notes = outline.render_nodes(shown, samples)
        return "\n".join([header, shape_title, *body, *_notes_text(notes), *sample_lines, *jq_lines])

    shown, samples = _fit_outline(outline, compose, budget, count, samples_allowed=not sample_lines)
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
