"""What a search pattern can match, read from its syntax: how long a match can be, whether it can cross a line,
which literal text every match must contain, and which literal every match starts with.

The scan (`scan.py`) uses these facts to stay exact with bounded windows and to find candidate lines by a literal
first, as ripgrep does. They are read conservatively: when unsure, the answer is the one that costs speed, never
exactness ("unbounded", "may span lines", no literal).

Required literals are kept as clauses: every match contains at least one needle of each clause. A plain pattern
gives one-needle clauses (`[a-z]+: timeout after \\d+ ms` needs ": timeout after " and " ms"); an alternation gives
one clause with a needle per branch (`timeout|ZEBRA-\\d+` needs "timeout" or "ZEBRA-"). A needle under case-
insensitive matching is `folded`: it is found under RE2's Unicode simple case folding.

Patterns are written for RE2; we read them with Python's own regex parser (`re._parser`), whose syntax is a
superset of the part of RE2's we trust it on. Where the two differ we do not guess: RE2-only syntax (`\\pL`,
`\\z`, `\\C`, `\\Q..\\E`, `\\x{..}`, flags after the start, `[[:alpha:]]`, `{,n}`, octal escapes) either fails to
parse or is screened out first, and the pattern gets the conservative shape.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

# Python's own regex parser, the one place here that reaches into another package's internals: `re._parser` and
# `re._constants` (CPython 3.11+) are the modules the deprecated `sre_parse`/`sre_constants` re-export with a
# DeprecationWarning; typeshed types them under the old names. Used only by `shape_of` below, which falls back to
# the conservative shape on any surprise.
if TYPE_CHECKING:
    import sre_constants as sc
    import sre_parse
else:
    from re import _constants as sc
    from re import _parser as sre_parse

_UNBOUNDED = 1 << 30  # sre_parse caps an unbounded width at MAXWIDTH; anything this large counts as unbounded
_NEWLINE = 0x0A
# Screened out before parsing: syntax sre_parse reads differently from RE2 (POSIX classes, "{,n}", octal/backrefs).
_DIVERGENT = re.compile(r"\[:|\{,|\\[0-9]")
_NEWLINE_CATEGORIES = frozenset({sc.CATEGORY_SPACE, sc.CATEGORY_NOT_DIGIT, sc.CATEGORY_NOT_WORD})
_SAFE_CATEGORIES = frozenset({sc.CATEGORY_DIGIT, sc.CATEGORY_WORD, sc.CATEGORY_NOT_SPACE})


_MAX_NEEDLES = 8  # an alternation with more branches than this gives no clause (each needle costs a pass)


@dataclass(frozen=True)
class Needle:
    """Literal text that a match contains: as written, or (`folded`) under case-insensitive matching."""

    text: str
    folded: bool = False


Clause = tuple[Needle, ...]  # every match contains at least one of these


@dataclass(frozen=True)
class PatternShape:
    """`max_bytes`: the longest match in UTF-8 bytes (None: unbounded or unknown). `spans_lines`: a match may
    contain "\\n". `needs`: clauses of needles every match contains (see the module's docstring). `prefix`: a
    needle every match starts with (None when unknown)."""

    max_bytes: int | None
    spans_lines: bool
    needs: tuple[Clause, ...] = ()
    prefix: Needle | None = None


UNKNOWN = PatternShape(max_bytes=None, spans_lines=True)


class _Unsure(Exception):
    """A construct we do not read: the pattern gets the conservative shape."""


def shape_of(pattern: str, *, literal: bool, case_sensitive: bool) -> PatternShape:
    """The shape of `pattern` as compile_pattern compiles it (with `(?m)`, UTF-8, never an empty match)."""
    if literal:
        # Simple case folding maps one character to one, of at most 4 bytes.
        size = len(pattern.encode("utf-8")) if case_sensitive else 4 * len(pattern)
        needle = Needle(pattern, folded=not case_sensitive)
        return PatternShape(max_bytes=size, spans_lines="\n" in pattern, needs=((needle,),), prefix=needle)
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
        folded = not case_sensitive or bool(flags & sc.SRE_FLAG_IGNORECASE)
        needs = tuple(dict.fromkeys(_needs(parsed.data, folded)))
        prefix = _prefix(parsed.data, folded)
    except (re.error, _Unsure, RecursionError, OverflowError, ValueError, TypeError):
        return UNKNOWN
    max_bytes = 4 * width if width < _UNBOUNDED else None
    return PatternShape(max_bytes=max_bytes, spans_lines=spans, needs=needs, prefix=prefix)


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


def _folded_inside(folded: bool, arg: Any) -> bool:
    _group, add, delete, _sub = arg
    return (folded or bool(add & sc.SRE_FLAG_IGNORECASE)) and not delete & sc.SRE_FLAG_IGNORECASE


def _needs(items: Sequence[tuple[Any, Any]], folded: bool) -> list[Clause]:
    """Clauses every match of the sequence `items` satisfies (see the module's docstring)."""
    clauses: list[Clause] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            clauses.append((Needle("".join(run), folded),))
            run.clear()

    for op, arg in items:
        if op is sc.LITERAL:
            run.append(chr(arg))
            continue
        flush()
        if op is sc.SUBPATTERN:
            clauses.extend(_needs(arg[3].data, _folded_inside(folded, arg)))
        elif op in (sc.MAX_REPEAT, sc.MIN_REPEAT) and arg[0] >= 1:
            clauses.extend(_needs(arg[2].data, folded))
        elif op is sc.BRANCH:
            clause = _any_of([_needs(alternative.data, folded) for alternative in arg[1]])
            if clause:
                clauses.append(clause)
    flush()
    return clauses


def _any_of(alternatives: list[list[Clause]]) -> Clause:
    """One clause for an alternation: the best clause of each branch, joined ("" when a branch has none)."""
    needles: dict[Needle, None] = {}
    for clauses in alternatives:
        if not clauses:
            return ()
        best = min(clauses, key=lambda clause: (len(clause), -min(len(needle.text) for needle in clause)))
        needles.update(dict.fromkeys(best))
    return tuple(needles) if len(needles) <= _MAX_NEEDLES else ()


def _prefix(items: Sequence[tuple[Any, Any]], folded: bool) -> Needle | None:
    """The literal every match starts with (after zero-width assertions), or None."""
    run: list[str] = []
    for op, arg in items:
        if op is sc.LITERAL:
            run.append(chr(arg))
            continue
        if op is sc.AT and not run:
            continue
        if op is sc.SUBPATTERN and not run:
            return _prefix(arg[3].data, _folded_inside(folded, arg))
        if op in (sc.MAX_REPEAT, sc.MIN_REPEAT) and arg[0] >= 1:
            inner = arg[2].data
            if len(inner) >= 1 and inner[0][0] is sc.LITERAL:
                run.append(chr(inner[0][1]))  # the first character of the first repetition
        break
    return Needle("".join(run), folded) if run else None
