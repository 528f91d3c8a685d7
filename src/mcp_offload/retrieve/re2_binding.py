"""The one place that touches `re2._re2`: google-re2's bound RE2 class, private to the package.

`re2.compile` builds Python match objects and keeps a 128-entry cache; the bound class searches a buffer (bytes,
an mmap) at (pos, endpos) and returns plain spans, without a copy, and its program and DFA cache are freed with
the object. The pattern (`pattern.py`) and the scan (`scan.py`) build their regexps here, so an upgrade of
google-re2 that moves the class breaks one module, at its import.
"""

from __future__ import annotations

from typing import Any

import re2
from re2 import _re2  # private to google-re2 (see the docstring); used nowhere else

Regexp = Any  # re2._re2.RE2: .ok(), .error(), .Match(anchor, text, pos, endpos) -> ((start, end), ...)

UNANCHORED = _re2.RE2.Anchor.UNANCHORED
ANCHOR_BOTH = _re2.RE2.Anchor.ANCHOR_BOTH
NO_MATCH = (-1, -1)


def build_regexp(
    source: bytes,
    *,
    literal: bool = False,
    case_sensitive: bool = True,
    latin1: bool = False,
    max_mem: int | None = None,
) -> Regexp:
    """A regexp (check `.ok()`) that reports no groups, logs nothing, and reads `source` as UTF-8 (or, `latin1`,
    as raw bytes: a literal that may start inside a character)."""
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True  # groups are not reported; one span per match is all RE2 needs to find
    options.literal = literal
    options.case_sensitive = case_sensitive  # Unicode simple case folding: "É" finds "é"
    if latin1:
        options.encoding = re2.Options.Encoding.LATIN1
    if max_mem is not None:
        options.max_mem = max_mem
    return _re2.RE2(source, options)


def error_of(regexp: Regexp) -> str:
    """RE2's message for a regexp that is not `.ok()`."""
    error = regexp.error()
    return error.decode("utf-8", "replace") if isinstance(error, bytes) else str(error)
