"""Spelling jq programs: keys, paths, projections and literals in the forms jq 1.6 and 1.7 both accept.

Plain identifiers that are not jq keywords are written `.key`; every other key is quoted (`.["a-b"]` first,
`["a-b"]` after). Keys holding lone surrogates cannot be named at all (jq reads them as U+FFFD), so no path is
written for them. `parse_plain_path` reads back a path made only of such steps, for checking it in the document.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_offload.unicode import encodes_as_utf8

__all__ = ["ITER", "is_identifier", "jq_field", "jq_literal", "jq_path", "parse_plain_path", "projection"]

ITER = None  # a path segment meaning "every element" ([])
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_JQ_KEYWORDS = frozenset(
    {
        *("and", "as", "break", "catch", "def", "elif", "else", "end", "foreach", "if", "import", "include"),
        *("label", "or", "reduce", "then", "try", "__loc__"),
    }
)
_PLAIN_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\.?\[(-?\d+)\]|\.?\[("(?:[^"\\]|\\.)*")\]')


def is_identifier(key: str) -> bool:
    """Whether jq accepts `.key` for this key."""
    return _IDENT.match(key) is not None and key not in _JQ_KEYWORDS


def jq_literal(value: str | int) -> str:
    """A string or integer as a jq literal (JSON's escapes are jq's; JSON never writes jq's `\\(`)."""
    return json.dumps(value, ensure_ascii=False)


def jq_field(key: str, first: bool) -> str:
    """`.key` for plain identifiers, else `["key"]` (`.["key"]` first): the forms jq 1.6 and 1.7 both accept."""
    if is_identifier(key):
        return f".{key}"
    quoted = json.dumps(key, ensure_ascii=False)
    return f".[{quoted}]" if first else f"[{quoted}]"


def jq_path(path: tuple[Any, ...]) -> str | None:
    """The jq path of a tuple of steps (keys, indices, ITER), or None when a key cannot be named."""
    out = ""
    for step in path:
        if step is ITER:
            out += ".[]" if not out else "[]"
        elif isinstance(step, int):
            out += f".[{step}]" if not out else f"[{step}]"
        elif not encodes_as_utf8(step):
            return None  # jq sees lone surrogates as U+FFFD: no path can name such a key
        else:
            out += jq_field(step, not out)
    return out or "."


def projection(keys: list[str]) -> str:
    """`{a, b}`; keys that are not identifiers spelled out: `{"a-b": .["a-b"]}`."""
    parts = []
    for key in keys:
        if is_identifier(key):
            parts.append(key)
        else:
            quoted = json.dumps(key, ensure_ascii=False)
            parts.append(f"{quoted}: .[{quoted}]")
    return "{" + ", ".join(parts) + "}"


def parse_plain_path(path: str) -> tuple[Any, ...] | None:
    """The steps of a path made only of `.key`, `[n]` and `["key"]` steps, else None."""
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
