"""What a search pattern can match, read from its syntax: how long a match can be, whether it can cross a line,
and which literal text every match must contain.

The scan (`scan.py`) uses these facts to stay exact with bounded windows and to prefilter on an inner literal, as
ripgrep does. They are read conservatively: when unsure, the answer is the one that costs speed, never exactness
("unbounded", "may span lines", no literal).

Patterns are written for RE2; we read them with Python's own regex parser (`sre_parse`), whose syntax is a
superset of the part of RE2's we trust it on. Where the two differ we do not guess: RE2-only syntax (`\\pL`,
`\\z`, `\\C`, `\\Q..\\E`, `\\x{..}`, flags after the start, `[[:alpha:]]`, `{,n}`, octal escapes) either fails to
parse or is screened out first, and the pattern gets the conservative shape.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as sc  # typed in typeshed; the same module as re._constants
    import sre_parse  # typed in typeshed; the same module as re._parser

_UNBOUNDED = 1 << 30  # sre_parse caps an unbounded width at MAXWIDTH; anything this large counts as unbounded
_NEWLINE = 0x0A
# Screened out before parsing: syntax sre_parse reads differently from RE2 (POSIX classes, "{,n}", octal/backrefs).
_DIVERGENT = re.compile(r"\[:|\{,|\\[0-9]")
_NEWLINE_CATEGORIES = frozenset({sc.CATEGORY_SPACE, sc.CATEGORY_NOT_DIGIT, sc.CATEGORY_NOT_WORD})
_SAFE_CATEGORIES = frozenset({sc.CATEGORY_DIGIT, sc.CATEGORY_WORD, sc.CATEGORY_NOT_SPACE})


@dataclass(frozen=True)
class PatternShape:
    """`max_bytes`: the longest match in UTF-8 bytes (None: unbounded or unknown). `spans_lines`: a match may
    contain "\\n". `literals`: byte strings each of which every match contains (case-sensitive patterns only)."""

    max_bytes: int | None
    spans_lines: bool
    literals: tuple[bytes, ...] = ()


UNKNOWN = PatternShape(max_bytes=None, spans_lines=True)


class _Unsure(Exception):
    """A construct we do not read: the pattern gets the conservative shape."""


def shape_of(pattern: str, *, literal: bool, case_sensitive: bool) -> PatternShape:
    """The shape of `pattern` as compile_pattern compiles it (with `(?m)`, UTF-8, never an empty match)."""
    if literal:
        # Simple case folding maps one character to one, of at most 4 bytes.
        size = len(pattern.encode("utf-8")) if case_sensitive else 4 * len(pattern)
        return PatternShape(max_bytes=size, spans_lines="\n" in pattern)
    if _DIVERGENT.search(pattern):
        return UNKNOWN
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FutureWarning on "[[" and friends: same meaning in both engines
            parsed = sre_parse.parse(pattern)
        flags = parsed.state.flags
        if flags & (sc.SRE_FLAG_VERBOSE | sc.SRE_FLAG_DEBUG):
            return UNKNOWN
        dotall = bool(flags & sc.SRE_FLAG_DOTALL)
        spans = _spans_lines(parsed.data, dotall)
        width = parsed.getwidth()[1]
    except (re.error, _Unsure, RecursionError, OverflowError, ValueError, TypeError):
        return UNKNOWN
    max_bytes = 4 * width if width < _UNBOUNDED else None
    literals: tuple[bytes, ...] = ()
    if case_sensitive and not flags & sc.SRE_FLAG_IGNORECASE:
        literals = tuple(dict.fromkeys(run for run in _required_runs(parsed.data) if run))
    return PatternShape(max_bytes=max_bytes, spans_lines=spans, literals=literals)


def _spans_lines(items: Sequence[tuple[Any, Any]], dotall: bool) -> bool:
    return any(_node_spans_lines(op, arg, dotall) for op, arg in items)


def _node_spans_lines(op: Any, arg: Any, dotall: bool) -> bool:
    if op is sc.LITERAL:
        return bool(arg == _NEWLINE)
    if op is sc.NOT_LITERAL:
        return bool(arg != _NEWLINE)
    if op is sc.ANY:
        return dotall
    if op is sc.IN:
        return _class_has_newline(arg)
    if op is sc.AT:
        return False
    if op in (sc.MAX_REPEAT, sc.MIN_REPEAT):
        _lo, hi, sub = arg
        return hi > 0 and _spans_lines(sub.data, dotall)
    if op is sc.SUBPATTERN:
        _group, add, delete, sub = arg
        inner = (dotall or bool(add & sc.SRE_FLAG_DOTALL)) and not delete & sc.SRE_FLAG_DOTALL
        return _spans_lines(sub.data, inner)
    if op is sc.BRANCH:
        return any(_spans_lines(alt.data, dotall) for alt in arg[1])
    raise _Unsure(str(op))


def _class_has_newline(items: Sequence[tuple[Any, Any]]) -> bool:
    negate = bool(items) and items[0][0] is sc.NEGATE
    found = False
    for op, arg in items[1:] if negate else items:
        if op is sc.LITERAL:
            found = found or arg == _NEWLINE
        elif op is sc.RANGE:
            found = found or arg[0] <= _NEWLINE <= arg[1]
        elif op is sc.CATEGORY and arg in _NEWLINE_CATEGORIES:
            found = True
        elif not (op is sc.CATEGORY and arg in _SAFE_CATEGORIES):
            raise _Unsure(str(op))
    return found != negate


def _required_runs(items: Sequence[tuple[Any, Any]]) -> list[bytes]:
    """Runs of literal characters that every match of the sequence `items` contains (possibly empty ones)."""
    runs: list[bytes] = []
    current: list[str] = []
    for op, arg in items:
        if op is sc.LITERAL:
            current.append(chr(arg))
            continue
        runs.append("".join(current).encode("utf-8"))
        current = []
        if op is sc.SUBPATTERN:
            _group, add, _delete, sub = arg
            if not add & sc.SRE_FLAG_IGNORECASE:
                runs.extend(_required_runs(sub.data))
        elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT) and arg[0] >= 1:
            runs.extend(_required_runs(arg[2].data))
    runs.append("".join(current).encode("utf-8"))
    return runs
