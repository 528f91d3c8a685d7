"""Which kind an output is (JSON, JSON Lines or text), decided by parsing it, exactly and fast.

Parsing is exact: orjson when it can, `json` for what orjson gets wrong or refuses (integers beyond 64 bits, lone
surrogates), with the cyclic GC paused while millions of containers are built. It is also the expensive part on
large outputs, so it fails fast: a text whose first non-space character cannot start JSON is rejected at once, a long
invalid document is rejected from a 64 KiB prefix, and JSON Lines are validated chunk by chunk with the first chunk
small. JSON Lines keep only a sample of their records, for the preview.
"""

from __future__ import annotations

import gc
import json
import queue
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import re2

from mcp_offload.store.base import Kind
from mcp_offload.store.content_index import Encoded

__all__ = ["JsonLines", "as_json_lines", "detect_kind", "free_later", "gc_paused", "parse_document"]


@dataclass(frozen=True)
class JsonLines:
    """What `detect_kind` learnt about a JSON Lines output: it has parsed every line, but keeps only a sample."""

    count: int  # records (non-blank lines)
    sample: list[Any] = field(default_factory=list)  # parsed records, the first ones then spread over the output
    all_objects: bool = True  # every record is a JSON object
    all_arrays: bool = False  # every record is a JSON array


_JSON_WS = re.compile(r"[ \t\r\n]*")
_JSON_STARTS = frozenset('{["-0123456789tfn')
# Integers orjson cannot hold exactly (above 2**64-1 or below -2**63) need at least these digits; orjson turns
# them into floats silently, so a text containing such a run is parsed with `json` instead. re2 scans 10 MB in
# ~15 ms where `re` takes ~100 ms.
_BIG_NUMBER = re2.compile(r"[0-9]{20}|-[0-9]{19}")
# Both need a run of 19 digits. Given the UTF-8 bytes, a run is looked for chunk by chunk with every digit mapped to
# "0" (translate + find: ~2x faster than re2 on 100 MB, and no second UTF-8 copy of the text); re2 decides only
# when there is one. Any 19 bytes in a row hold a whole 8-byte word at an offset that is a multiple of 8, so a chunk
# none of whose such words is 8 digits holds no run and is not scanned: that test reads the bytes as 64-bit words
# (numpy, 8 bytes per comparison: ~1 ms for 10 MB, where the scan takes ~20 ms; most JSON has no 8-digit words).
_DIGIT_RUN = b"0" * 19
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_DIGIT_SCAN_CHUNK = 1 << 20  # bytes, a multiple of 8
_HIGH_NIBBLES = np.uint64(0xF0F0F0F0F0F0F0F0)
_THREES = np.uint64(0x3030303030303030)  # every byte 0x3_
_SIXES = np.uint64(0x0606060606060606)  # + 6 keeps a byte 0x30-0x39 in 0x3_, carries 0x3A-0x3F out of it
_PREFIX_CHARS = 64 * 1024
_PREFIX_MARGIN = 64
_FIRST_CHUNK = 64 * 1024
_CHUNK = 1024 * 1024
_SAMPLE_RECORDS_HEAD = 64
_SAMPLE_RECORDS = 128


def detect_kind(text: str, utf8: Encoded | None = None) -> tuple[Kind, object | None]:
    """("json", value) | ("jsonl", JsonLines) | ("text", None).

    JSON is strict RFC 8259: NaN and Infinity are not JSON (jq versions disagree on them), and documents nested
    deeper than the parsers allow (orjson: 1024 levels) count as text. JSON Lines means at least two non-blank
    lines, each one JSON object or array on its own; blank lines may come between them. `utf8`, when the caller
    has it, is `text` encoded (lone surrogates with surrogatepass): it makes the big-number check cheaper.
    """
    start = _JSON_WS.match(text).end()  # type: ignore[union-attr]  # "[ \t\r\n]*" matches (maybe empty) anywhere
    if start == len(text) or text[start] not in _JSON_STARTS:
        return "text", None
    parsed, value = parse_document(text, utf8)
    if parsed:
        return "json", value
    if text[start] in "{[":
        lines = _parse_json_lines(text)
        if lines is not None:
            return "jsonl", lines
    return "text", None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Building millions of containers triggers the cyclic GC over and over (~40% of a parse); none are garbage.

    Re-enabling it while they are alive costs one collection over all of them (~1 s for 100 MB of JSON): a caller
    that drops the parsed value soon (the offload) keeps the GC paused until it has (nesting is fine).
    """
    _pause_gc()
    try:
        yield
    finally:
        _resume_gc()


# The pauses of all threads are counted: the GC comes back when the last one ends (a pause ending in one thread
# must not turn it back on under another's parse), and only if it was on when the first one began.
_pauses_lock = threading.Lock()
_pauses = 0
_resume = False


def _pause_gc() -> None:
    global _pauses, _resume
    with _pauses_lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
        _pauses += 1


def _resume_gc() -> None:
    global _pauses
    with _pauses_lock:
        _pauses -= 1
        if _pauses == 0 and _resume:
            gc.enable()


_doomed: queue.SimpleQueue[object] = queue.SimpleQueue()
_freer: threading.Thread | None = None
_freer_lock = threading.Lock()


def free_later(value: object) -> None:
    """Free `value` (a parsed document) in a background thread, the GC paused until it is gone: freeing a parse's
    millions of objects costs ~20 % of the parse, which need not come before the answer. The caller hands its
    reference over (and drops its own)."""
    global _freer
    _pause_gc()  # here, so the GC stays off from the caller's pause to the freeing
    _doomed.put(value)
    del value
    with _freer_lock:
        if _freer is None:
            # a daemon: at exit the process frees everything anyway
            _freer = threading.Thread(target=_free_forever, name="free-parsed", daemon=True)
            _freer.start()


def _free_forever() -> None:
    while True:
        value = _doomed.get()
        del value
        _resume_gc()


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _has_digit_run(utf8: Encoded) -> bool:
    """Whether the bytes hold 19 digits in a row.

    A chunk is scanned only when one of its 8-byte words (at offsets that are multiples of 8) is all digits, and then
    with 18 bytes either side: a run of 19 holds such a word, and a 19-byte stretch of the run touching that word lies
    within 18 bytes of it (so no run is missed, and none is cut)."""
    words = np.frombuffer(utf8, dtype=np.uint64, count=len(utf8) // 8)
    per_chunk = _DIGIT_SCAN_CHUNK // 8
    reach = len(_DIGIT_RUN) - 1
    for first in range(0, len(words), per_chunk):
        chunk = words[first : first + per_chunk]
        digits = np.equal(np.bitwise_and(chunk, _HIGH_NIBBLES), _THREES)
        if not digits.any():
            continue
        digits &= np.equal(np.bitwise_and(chunk + _SIXES, _HIGH_NIBBLES), _THREES)
        if not digits.any():
            continue
        start = first * 8
        scanned = utf8[max(0, start - reach) : start + _DIGIT_SCAN_CHUNK + reach]
        if scanned.translate(_DIGITS_AS_ZERO).find(_DIGIT_RUN) >= 0:
            return True
    return False


def _loads_exact(text: str, utf8: Encoded | None = None) -> Any:
    """Parse one JSON text exactly: orjson when it can, `json` for what orjson gets wrong or refuses.

    orjson refuses lone surrogates (raw or escaped) and numbers beyond a double, and rounds big integers; `json`
    keeps all of those exactly. Raises ValueError (JSONDecodeError) or RecursionError when it is not JSON.
    `utf8` is `text` encoded, when the caller has it.
    """
    try:
        needs_json = (utf8 is None or _has_digit_run(utf8)) and _BIG_NUMBER.search(text) is not None
    except UnicodeEncodeError:  # re2 wants UTF-8: the text has lone surrogates, which orjson refuses too
        needs_json = True
    if not needs_json:
        try:
            with gc_paused():
                return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            reason = str(exc)
            if "surrogate" not in reason and "number" not in reason:
                raise
    with gc_paused():
        return json.loads(text, parse_constant=_reject_constant)


def parse_document(text: str, utf8: Encoded | None = None) -> tuple[bool, Any]:
    """(True, value) when the whole of `text` (encoded: `utf8`, if given) is one JSON document, else (False, None)."""
    if _prefix_rejects(text, len(text)):
        return False, None
    try:
        return True, _loads_exact(text, utf8)
    except (ValueError, RecursionError):
        return False, None


def _prefix_rejects(text: str, end: int) -> bool:
    """True when a prefix already proves `text[:end]` is not one JSON document (orjson copies all of it first).

    A truncated valid document only ever fails near its end (or with "Unterminated string", reported where the
    string starts), so an error well before the end of the prefix is an error in the whole text.
    """
    if end <= _PREFIX_CHARS + _PREFIX_MARGIN:
        return False
    prefix = text[:_PREFIX_CHARS]
    try:
        json.loads(prefix, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        return exc.pos < len(prefix) - _PREFIX_MARGIN and not exc.msg.startswith("Unterminated string")
    except ValueError:
        return True  # NaN / Infinity
    except RecursionError:
        return False
    return False  # a complete value in the prefix: the full parse decides whether anything follows


def _parse_json_lines(text: str) -> JsonLines | None:
    count = 0
    objects = arrays = 0
    sample: list[Any] = []
    pos, size, chunk = 0, len(text), _FIRST_CHUNK
    reach = _PREFIX_CHARS + _PREFIX_MARGIN + 1
    if text.find("\n", 0, reach) < 0:  # a first line longer than the prefix check's reach
        if _prefix_rejects(text, size):
            return None  # not JSON, seen from its prefix: before any search reads on (100 MB) or orjson copies it
        if text.find("\n", reach) < 0:
            return None  # one line is not JSON Lines (two are needed): it is not parsed a second time
    with gc_paused():
        while pos < size:
            end = text.find("\n", pos + chunk)
            end = size if end < 0 else end
            lines = text[pos:end].split("\n")
            checked = _check_lines(lines)
            if checked is None:
                return None
            got, got_objects = checked
            objects += got_objects
            arrays += got - got_objects
            if got:
                if end == size and pos == 0:  # all in one chunk: sample up to the cap from it
                    wanted = _SAMPLE_RECORDS
                elif count < _SAMPLE_RECORDS_HEAD:
                    wanted = _SAMPLE_RECORDS_HEAD - len(sample)
                else:
                    wanted = 2
                if len(sample) < _SAMPLE_RECORDS and wanted > 0:
                    sample.extend(_first_records(lines, min(wanted, _SAMPLE_RECORDS - len(sample))))
            count += got
            pos, chunk = end + 1, _CHUNK
    if count < 2:
        return None
    return JsonLines(count=count, sample=sample, all_objects=arrays == 0, all_arrays=objects == 0)


def _check_lines(lines: list[str]) -> tuple[int, int] | None:
    """(records, how many are objects) when every non-blank line is a JSON object or array, else None."""
    while lines and not lines[-1]:
        lines.pop()
    if lines and max(map(len, lines)) > _PREFIX_CHARS:
        for line in lines:
            if _prefix_rejects(line, len(line)):
                return None
    objects = 0
    try:
        for value in map(orjson.loads, lines):  # the fast path: no blank lines, nothing orjson refuses
            if value.__class__ is dict:
                objects += 1
            elif value.__class__ is not list:
                return None
        return len(lines), objects
    except orjson.JSONDecodeError:
        pass
    records = objects = 0
    for line in lines:
        if not line.strip(" \t\r"):
            continue
        try:
            value = _loads_exact(line)
        except (ValueError, RecursionError):
            return None
        if value.__class__ is dict:
            objects += 1
        elif value.__class__ is not list:
            return None
        records += 1
    return records, objects


def _first_records(lines: list[str], limit: int) -> list[Any]:
    out: list[Any] = []
    for line in lines:
        if len(out) >= limit:
            break
        if line.strip(" \t\r"):
            out.append(_loads_exact(line))
    return out


def as_json_lines(text: str, parsed: object | None) -> JsonLines | None:
    """The JSON Lines view of `text`, reusing `parsed` when it already is the list of its records."""
    if isinstance(parsed, list) and parsed:
        count = sum(1 for line in text.split("\n") if line.strip(" \t\r"))
        sample = parsed[:_SAMPLE_RECORDS]
        all_objects = all(type(r) is dict for r in parsed)
        all_arrays = all(type(r) is list for r in parsed)
        return JsonLines(count=count, sample=sample, all_objects=all_objects, all_arrays=all_arrays)
    return _parse_json_lines(text)
