"""Where a byte sits in a stored JSON / JSON Lines document: its jq path, a breadcrumb, its enclosing record.

Each lookup starts from the nearest structure checkpoint at or before the byte (`json_structure.py`) and
tokenizes forward to it (at most about one checkpoint interval, plus the rest of a string that crosses it), so it
costs O(interval + depth) whatever the document's size, on pretty-printed and one-line JSON alike. Keys are read
back from just after each level's last `{`/`,`; a breadcrumb looks at most `ID_SCAN_BYTES` into each ancestor
object for an identifying field (`name`, `title`, `id`, `key`, `login`, ...).

Paths are jq paths that `query_large_output` accepts as they are: `.[77].children[0].name`, `."a b"`,
`.items[3].id`; for JSON Lines they are relative to the record (the query tool runs a program per record) and
the record's 0-based number is given separately. A hit inside a key gets the path of that key's member; a hit
on a container's bracket, comma or the whitespace between members gets the container's path.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from mcp_offload.retrieve.json_structure import JsonStructure
from mcp_offload.store.content_index import Buffer

ID_SCAN_BYTES = 4096  # how far into an object a breadcrumb looks for an identifying field
ID_KEYS = ("name", "title", "login", "key", "id", "slug", "path", "label", "username", "email", "uuid", "number")
_ID_RANK = {key: rank for rank, key in enumerate(ID_KEYS)}
ID_CHARS = 40  # a breadcrumb entry is cut to this many characters
BREADCRUMB_ENTRIES = 8

_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'
_TOKEN = re.compile(_STRING + rb"|[][{},:]")
_MEMBER_TOKEN = re.compile(_STRING + rb'|[][{},:]|[^][{},:"\s]+')
_KEY_AFTER = re.compile(rb"\s*(" + _STRING + rb")")
_VALUE_AT = re.compile(rb"\s*(" + _STRING + rb'|[^][{},:"\s]+)')
_SURROGATE = re.compile("[\ud800-\udfff]")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_JQ_KEYWORDS = frozenset(
    [
        "and",
        "or",
        "not",
        "if",
        "then",
        "elif",
        "else",
        "end",
        "as",
        "def",
        "reduce",
        "foreach",
        "try",
        "catch",
        "label",
        "import",
        "include",
        "__loc__",
    ]
)
_OPENERS = frozenset(b"[{")
_CLOSERS = frozenset(b"]}")
_QUOTE, _COMMA, _COLON, _LBRACKET = ord('"'), ord(","), ord(":"), ord("[")

PathPart = str | int


@dataclass(slots=True)
class Open:
    """A container open at the located byte: its opener's byte, kind, current element index and last separator."""

    open: int
    is_array: bool
    count: int
    member: int


@dataclass(frozen=True, slots=True)
class Place:
    """The located byte: the containers holding it (outermost first) and the path of the value it is in."""

    stack: tuple[Open, ...]
    path: tuple[PathPart, ...]
    record: int | None  # JSON Lines: 0-based record number (None for JSON)


def _decode_string(raw: bytes) -> str:
    value = json.loads(raw.decode("utf-8", "surrogatepass"))
    return value if isinstance(value, str) else str(value)


def jq_key(key: str) -> str:
    """One object key as a jq path step: `.name`, or `."a b"` when it is not a plain identifier."""
    if _IDENTIFIER.fullmatch(key) and key not in _JQ_KEYWORDS:
        return "." + key
    quoted = json.dumps(key, ensure_ascii=False)
    return "." + (json.dumps(key) if _SURROGATE.search(quoted) else quoted)  # lone surrogates stay escaped


def jq_path(path: tuple[PathPart, ...]) -> str:
    """`.[77].children[0].name`; the empty path is `.`."""
    out = []
    for part in path:
        out.append(f"[{part}]" if isinstance(part, int) else jq_key(part))
    text = "".join(out)
    return "." + text if text.startswith("[") else text or "."


def _key_after(data: Buffer, separator: int) -> str | None:
    """The key of the member that starts after byte `separator` (a `{` or `,`)."""
    found = _KEY_AFTER.match(data, separator + 1)
    return _decode_string(found.group(1)) if found else None


def _start(structure: JsonStructure, byte: int) -> tuple[list[Open], int, int]:
    k = structure.checkpoint_before(byte)
    if k < 0:
        return [], 0, 0
    stack = [Open(level.open, level.is_array, level.count, level.member) for level in structure.stack(k)]
    return stack, int(structure.records[k]), int(structure.pos[k])


def locate(structure: JsonStructure, data: Buffer, byte: int, *, lines: bool) -> Place:
    """The place of byte `byte` (a hit's first byte). `lines`: the document is JSON Lines."""
    stack, records, start = _start(structure, byte)
    in_value = not stack or stack[-1].is_array
    for token in _TOKEN.finditer(data, start):
        t0 = token.start()
        char = data[t0]
        if t0 >= byte:
            if t0 == byte:
                # a string (value, or key: its member), a bracket opening the value, or a member's ":"
                in_value = char in _OPENERS or char in (_QUOTE, _COLON)
            break
        if char == _QUOTE:
            if token.end() > byte:  # the hit is inside this string: a value, or a key (its member's path)
                in_value = True
                break
            continue
        if char in _OPENERS:
            stack.append(Open(t0, char == _LBRACKET, 0, t0))
            in_value = char == _LBRACKET
            if len(stack) == 1:
                records += 1
        elif char in _CLOSERS:
            if stack:
                stack.pop()
            in_value = True
        elif char == _COMMA:
            if stack:
                stack[-1].count += 1
                stack[-1].member = t0
                in_value = stack[-1].is_array
        else:  # ":"
            in_value = True
    path: list[PathPart] = []
    for depth, level in enumerate(stack):
        if depth == len(stack) - 1 and not in_value:
            break
        if level.is_array:
            path.append(level.count)
            continue
        key = _key_after(data, level.member)
        if key is None:
            break
        path.append(key)
    record = records - 1 if lines and stack else None
    return Place(tuple(stack), tuple(path), record)


# -- breadcrumbs ---------------------------------------------------------------------------------------------------


def _scalar_text(raw: bytes) -> str:
    text = _decode_string(raw) if raw[:1] == b'"' else raw.decode("utf-8", "replace")
    return text if len(text) <= ID_CHARS else text[: ID_CHARS - 1] + "…"


def identifying_field(data: Buffer, opener: int) -> str | None:
    """The value of the best identifying field among the first `ID_SCAN_BYTES` of the object at `opener`."""
    best: tuple[int, str] | None = None
    depth = 0
    key: str | None = None
    expect_key = True
    limit = opener + ID_SCAN_BYTES
    for token in _MEMBER_TOKEN.finditer(data, opener + 1):
        t0 = token.start()
        if t0 > limit:
            break
        char = data[t0]
        if char in _OPENERS:
            depth += 1
            key = None
        elif char in _CLOSERS:
            if depth == 0:
                break
            depth -= 1
        elif depth:
            continue
        elif char == _COMMA:
            expect_key, key = True, None
        elif char == _COLON:
            expect_key = False
        elif expect_key and char == _QUOTE:
            key = _decode_string(token.group()).lower()
        elif key is not None and key in _ID_RANK:
            rank = _ID_RANK[key]
            if best is None or rank < best[0]:
                best = (rank, _scalar_text(token.group()))
                if rank == 0:
                    break
            key = None
    return best[1] if best else None


def breadcrumb(data: Buffer, stack: tuple[Open, ...], seen: dict[int, str | None]) -> str | None:
    """`pkg077 › src › mod0 › plan.md`: the identifying fields of the objects holding a hit, outermost first.
    `seen` caches per-object answers across the hits of one search."""
    names = []
    for level in stack:
        if level.is_array:
            continue
        if level.open not in seen:
            seen[level.open] = identifying_field(data, level.open)
        name = seen[level.open]
        if name is not None:
            names.append(name)
    if not names:
        return None
    if len(names) > BREADCRUMB_ENTRIES:
        names = ["…", *names[-BREADCRUMB_ENTRIES:]]
    return " › ".join(names)


# -- records -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordSpan:
    """The record holding a hit: its path (from the document or, JSON Lines, record root) and bytes [start, end)."""

    path: tuple[PathPart, ...]
    record: int | None
    start: int
    end: int


def _container_end(structure: JsonStructure, data: Buffer, opener: int, level: int) -> int:
    """The byte after the bracket that closes the container opened at `opener` (0-based stack `level`)."""
    first = structure.checkpoint_before(opener) + 1  # checkpoints after the opener may still have it open
    lo, hi = first, len(structure.pos)
    while lo < hi:
        mid = (lo + hi) // 2
        if structure.open_at(mid, level) == opener:
            lo = mid + 1
        else:
            hi = mid
    if lo > first:
        start, depth = int(structure.pos[lo - 1]), structure.depth(lo - 1) - level
    else:
        start, depth = opener, 0
    for token in _TOKEN.finditer(data, start):
        char = data[token.start()]
        if char in _OPENERS:
            depth += 1
        elif char in _CLOSERS:
            depth -= 1
            if depth == 0:
                return int(token.end())
    return len(data)


def _value_end(structure: JsonStructure, data: Buffer, start: int, level: int) -> int:
    if data[start] in _OPENERS:
        return _container_end(structure, data, start, level)
    found = _VALUE_AT.match(data, start)
    return start + len(found.group(0)) if found else start


def _skip_space(data: Buffer, pos: int) -> int:
    while pos < len(data) and data[pos] in b" \t\r\n":
        pos += 1
    return pos


def record_of(structure: JsonStructure, data: Buffer, place: Place, *, lines: bool) -> RecordSpan | None:
    """The record holding `place`: a JSON Lines line's value; in JSON, the element of the outermost array on the
    path (`.[3]`, `.items[3]`, `.data.orders[3]`), or the whole document when no array holds the hit."""
    stack = place.stack
    if lines:
        if not stack:
            return None
        opener = stack[0].open
        return RecordSpan((), place.record, opener, _container_end(structure, data, opener, 0))
    outer = next((depth for depth, level in enumerate(stack) if level.is_array), None)
    if outer is None or len(place.path) <= outer:
        start = _skip_space(data, 0)
        end = len(data)
        while end > start and data[end - 1] in b" \t\r\n":
            end -= 1
        return RecordSpan((), None, start, end)
    start = _skip_space(data, stack[outer].member + 1)
    return RecordSpan(place.path[: outer + 1], None, start, _value_end(structure, data, start, outer + 1))
