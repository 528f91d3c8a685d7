"""The matcher: a search pattern validated, compiled for RE2 and described, in one object (`CompiledPattern`).

Why RE2 (PyPI `google-re2`): its automata run in time linear in the text whatever the pattern, so a hostile or
careless pattern such as `(a+)+$` cannot pin a worker thread; the price is no backreferences, lookarounds,
possessive or atomic groups, which we reject with a message that says what to use instead.

Pattern rules: at most `max_chars` characters, not empty, no unpaired surrogates; a raw NUL is allowed only
with `literal=True` (in a regex it is almost always an escaping accident; write `\\x00`); a pattern that can
match the empty string (`a*`, `^`, `\\b`, `x|`) is rejected, since it would give empty matches everywhere.
Patterns run in UTF-8 mode with `(?m)`, so `^`/`$` are per line and `.` never matches "\\n".
Case-insensitive matching uses Unicode simple case folding ("É" finds "é", "k" finds KELVIN SIGN), but RE2's
`\\w`, `\\d`, `\\s` and `\\b` are ASCII-only: use `\\pL`, `\\p{N}` or `[\\p{L}\\p{N}_]` for any script.
Each compiled pattern owns its RE2 object (not `re2.compile`'s 128-entry cache), whose program and DFA cache
are capped by `max_mem`, and is freed with it.

A compiled pattern carries what the scan needs to know about it: its `shape` (`pattern_shape.py`: match length,
whether it crosses lines, required literals) and its `lead` (the literal every match starts with).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import re2

from mcp_offload.errors import SearchError
from mcp_offload.retrieve.pattern_shape import PatternShape, shape_of
from mcp_offload.retrieve.re2_binding import ANCHOR_BOTH, NO_MATCH, Regexp, build_regexp, error_of
from mcp_offload.unicode import encodes_as_utf8

DEFAULT_MAX_MEM = 8 << 20  # RE2's own default, set explicitly: program + DFA cache per compiled pattern

# One text per (previous, next) character class that RE2's empty-width assertions can tell apart: start/end of
# text, "\n", an ASCII word character, anything else. A pattern matches the empty string somewhere iff it
# matches it at some position of one of these.
_EMPTY_PROBES = tuple((a + b).encode() for a in ("", "\n", "a", " ") for b in ("", "\n", "a", " "))


@dataclass(frozen=True)
class CompiledPattern:
    """A validated pattern compiled for RE2. Build with `compile_pattern`; safe to share between threads."""

    pattern: str
    literal: bool
    case_sensitive: bool
    regexp: Regexp = field(repr=False, compare=False)
    shape: PatternShape = field(repr=False, compare=False)
    lead: str = ""  # text every match starts with ("" when unknown): lets a scan skip ahead on a rare byte


# -- compiling -------------------------------------------------------------------------------------------------

_LITERAL_HINT = "or pass literal=true to search for the text exactly as typed"


def _explain(error: str, pattern: str) -> str:
    """Turn an RE2 error into what was unsupported and what to write instead."""
    what, _, arg = error.partition(": ")
    if what == "invalid perl operator":
        if arg in ("(?=", "(?!"):
            return (
                "lookahead (?=...) / (?!...) is not supported (linear-time engine): search for the surrounding "
                f"text itself, e.g. 'foo bar' instead of 'foo(?= bar)', {_LITERAL_HINT}."
            )
        if arg in ("(?<=", "(?<!"):
            return (
                "lookbehind (?<=...) / (?<!...) is not supported (linear-time engine): search for the surrounding "
                f"text itself, e.g. 'foo bar' instead of '(?<=foo )bar', {_LITERAL_HINT}."
            )
        if arg == "(?>":
            return "atomic groups (?>...) are not supported (linear-time engine): use a plain group (?:...)."
        if arg == "(?(":
            return "conditionals (?(1)...|...) are not supported: use an alternation (a|b) instead."
        if arg == "(?#":
            return "inline comments (?#...) are not supported: remove them from the pattern."
        if arg == "(?P" and "(?P=" in pattern:
            return (
                "backreferences (?P=name) are not supported (linear-time engine): repeat the text you expect "
                f"instead, {_LITERAL_HINT}."
            )
        return (
            f"the inline flag or group syntax {arg!r} is not supported: use (?:...) for groups and (?i), (?s), (?m) "
            f"or (?U) for flags, {_LITERAL_HINT}."
        )
    if what == "invalid escape sequence":
        letter = arg[1:2]
        if letter.isdigit() or letter in ("g", "k"):
            return (
                f"backreferences like {arg} are not supported (linear-time engine): repeat the text you expect "
                f"instead (e.g. '(ab)ab' for '(ab)\\1'), {_LITERAL_HINT}."
            )
        if letter == "Z":
            return "\\Z is not supported: use \\z for the end of the text or $ for the end of a line."
        if letter in ("u", "U", "N"):
            return f"{arg} is not supported: write a code point as \\x{{263A}}, or put the character itself."
        if letter in ("G", "K", "R", "X", "h", "H", "v", "V", "e", "c"):
            return f"the escape {arg} is not supported: use \\s, \\w, \\d, [...] classes or \\x{{..}}, {_LITERAL_HINT}."
        return f"invalid escape sequence {arg}: escape only punctuation, {_LITERAL_HINT}."
    if what == "bad repetition operator":
        if len(arg) >= 2 and arg[-1] == "+":
            return (
                f"possessive quantifiers ({arg}) are not supported (linear-time engine, none are needed): "
                "drop the trailing '+', e.g. 'a+' instead of 'a++'."
            )
        return f"bad repetition operator {arg!r}: a quantifier must follow something to repeat, {_LITERAL_HINT}."
    if what == "invalid repetition size":
        return f"repetition count {arg} is too large: counts go up to 1000 in total, e.g. '\\w{{1,100}}'."
    if what == "invalid character class range" and arg.startswith(("\\p", "\\P")):
        return f"unknown unicode class {arg}: use e.g. \\p{{L}}, \\p{{Greek}}, \\p{{Nd}}, or a [...] class."
    if error.startswith("pattern too large"):
        return (
            "the pattern is too large for the linear-time engine's memory cap: use smaller repetition counts "
            f"(e.g. '\\w{{1,50}}' instead of '\\w{{1,1000}}') or fewer alternatives, {_LITERAL_HINT}."
        )
    return f"invalid regular expression ({error}): fix the pattern, {_LITERAL_HINT}."


def compile_pattern(
    pattern: str,
    *,
    literal: bool,
    case_sensitive: bool,
    max_chars: int = 4096,
    max_mem: int = DEFAULT_MAX_MEM,
) -> CompiledPattern:
    """Validate and compile `pattern` (raises `SearchError` with a message for the model)."""
    if not isinstance(pattern, str) or not pattern:
        raise SearchError("the pattern is empty: give the text or regular expression to search for.")
    if len(pattern) > max_chars:
        raise SearchError(
            f"the pattern has {len(pattern):,} characters; the limit is {max_chars:,}. Search for a shorter, "
            "distinctive part of the text."
        )
    if not encodes_as_utf8(pattern):
        raise SearchError("the pattern contains an unpaired surrogate code point: remove it or search nearby text.")
    if "\x00" in pattern and not literal:
        raise SearchError("the pattern contains a raw NUL character: write it as \\x00, or pass literal=true.")
    source = re2.escape(pattern) if literal else pattern
    regexp = build_regexp(("(?m)" + source).encode("utf-8"), case_sensitive=case_sensitive, max_mem=max_mem)
    if not regexp.ok():
        raise SearchError(_explain(error_of(regexp), pattern))
    for probe in _EMPTY_PROBES:
        for pos in range(len(probe) + 1):
            if regexp.Match(ANCHOR_BOTH, probe, pos, pos)[0] != NO_MATCH:
                raise SearchError(
                    "the pattern can match the empty string (like 'a*', 'x?', '^', '$', '\\b' or an empty "
                    "alternative 'a|'), which would give empty matches everywhere. Make it consume at least one "
                    "character: use + instead of *, drop the empty alternative; to find empty lines search '^\\r?\\n'."
                )
    shape = shape_of(pattern, literal=literal, case_sensitive=case_sensitive)
    lead = pattern if literal else _leading_literal(pattern)
    if not lead and shape.prefix is not None and shape.prefix.folded != case_sensitive:
        lead = shape.prefix.text  # read by the parser past what the quick reader stops at, e.g. "(?s)timeout"
    return CompiledPattern(pattern, literal, case_sensitive, regexp, shape, lead)


_META = frozenset("\\.^$*+?()[]{}|")
_QUANTIFIERS = frozenset("*?{")
_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _leading_literal(pattern: str) -> str:
    """The literal text every match of `pattern` starts with, read conservatively ("" when unsure).

    Plain characters and escaped punctuation count; we stop at anything else (classes, groups, escapes like
    \\d, anchors) and drop a character that a quantifier makes optional. Any "|" anywhere gives "".
    """
    if "|" in pattern:
        return ""
    out: list[str] = []
    i = 1 if pattern.startswith("^") else 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            if pattern[i + 1 : i + 2] not in _PUNCTUATION:
                break
            char, width = pattern[i + 1], 2
        elif char in _META:
            break
        else:
            width = 1
        after = pattern[i + width : i + width + 1]
        if after in _QUANTIFIERS:
            break
        out.append(char)
        if after == "+":
            break
        i += width
    return "".join(out)
