"""The preview of a log: levels, time span, first and last error, message templates with counts and first lines.

What answers questions about a log is not its head and tail but its shape: which messages it holds how often
(templates mined with Drain, log_templates.py), how many lines per level, when it starts and ends, and where the
errors are. The work is bounded whatever the size: a log up to `_MINE_ALL_CHARS` is mined whole (exact counts);
a bigger one is mined on a sample (its head, evenly spaced chunks and its tail; counts are then estimates, marked
"~"), and the first and last error are looked for in the first and last `_ERROR_WINDOW` characters only.

`log_line_score` is the cheap test the sniffer uses: the share of lines that start like a log line (a timestamp,
a level, or an access-log request in their first characters).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from mcp_offload.preview.calls import RetrievalCall, read_lines, regex_escape, search_pattern
from mcp_offload.preview.fit import plural
from mcp_offload.preview.listing import fit_listing
from mcp_offload.preview.log_templates import WILDCARD, Template, TemplateMiner
from mcp_offload.unicode import replace_surrogates

__all__ = ["log_line_score", "log_preview"]

_HEAD_CHARS = 120  # a line's timestamp and level are in its first characters
_SCORE_LINES = 50
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"  # ISO 8601 / Python logging
    r"|\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}"  # common log format
    r"|\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2}(?:\.\d+)?"  # redis
    r"|[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}"  # syslog / journal
    r"|\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2}"  # Go log, nginx error log
)
_LEVEL = re.compile(
    r"(?<![\w/.-])(TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|CRITICAL|CRIT|FATAL|SEVERE|ALERT|EMERG|PANIC)"
    r"(?![\w/-])"
)
_LEVEL_FIELD = re.compile(  # level=error, "level": "warn", [error]: only looked for when the head has = : or [
    r"(?:level|lvl|severity)\"?\s*[=:]\s*\"?(trace|debug|info|notice|warn|warning|error|critical|fatal)\b"
    r"|\[(trace|debug|info|notice|warn|warning|error|crit|critical|fatal|alert|emerg)\]",
    re.IGNORECASE,
)
_REDIS_LEVEL = re.compile(r"\d+:[XCSM] \d{1,2} [A-Z][a-z]{2} \d{4} [\d:.]+ ([.*#-]) ")
_REDIS_LEVELS = {".": "DEBUG", "-": "VERBOSE", "*": "NOTICE", "#": "WARNING"}
_ACCESS = re.compile(r"\"(?:GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|CONNECT|TRACE) \S+ HTTP/[\d.]+\" (\d{3})\b")
_LEVEL_NAMES = {"WARN": "WARNING", "ERR": "ERROR", "CRIT": "CRITICAL", "EMERG": "EMERGENCY"}
_ERROR_LEVELS = frozenset({"ERROR", "CRITICAL", "FATAL", "SEVERE", "ALERT", "EMERGENCY", "PANIC"})
_LEVEL_ORDER = (
    "TRACE",
    "DEBUG",
    "VERBOSE",
    "INFO",
    "NOTICE",
    "WARNING",
    "ERROR",
    "CRITICAL",
    "SEVERE",
    "FATAL",
    "ALERT",
)
_BINARY = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")

# Mining costs ~8 µs a line when lines share templates, up to ~25 µs when every line is unlike the others (each is
# compared with a full leaf). The preview is part of the offload's answer, so its work is bounded to ~500 lines
# (~10 ms; measured by bench/run.py --only previews): a log up to 48 KB is mined whole, a bigger one on ~48 KB of
# samples (its head, evenly spaced chunks and its tail), the same bytes every time (the preview is deterministic).
_MINE_ALL_CHARS = 48_000
_SAMPLE_HEAD = 16_000
_SAMPLE_TAIL = 8_000
_SAMPLE_CHUNKS = 8
_SAMPLE_CHUNK = 3_000
_ERROR_WINDOW = 8_000_000
_ERROR_CHUNK = 64 * 1024
_TEMPLATE_WIDTH = 110
_PATTERN_CHARS = 160
_CONTEXT_AFTER = 15  # lines read after an error: a traceback or the lines it caused


def log_line_score(lines: list[str]) -> float:
    """The share of non-blank `lines` that start like a log line."""
    seen = hits = 0
    for line in lines[:_SCORE_LINES]:
        if not line.strip():
            continue
        seen += 1
        head = line[:_HEAD_CHARS]
        if _TIMESTAMP.search(head) or _ACCESS.search(line) or _uppercase_level(head):
            hits += 1
    return hits / seen if seen else 0.0


def _uppercase_level(head: str) -> bool:
    return _LEVEL.search(head) is not None


@dataclass(frozen=True, slots=True)
class _Event:
    line: int
    level: str  # as written: "ERROR", "error", "5xx"
    text: str


@dataclass(slots=True)
class _Mined:
    miner: TemplateMiner
    levels: Counter[str]
    statuses: Counter[str]
    lines: int = 0
    unreadable: int = 0
    first_time: str | None = None
    last_time: str | None = None


def _level_of(head: str) -> tuple[str, str] | None:
    """(normalised level, as written) of a line's head, else None; lowercase bare words are not levels."""
    redis = _REDIS_LEVEL.match(head)
    if redis is not None:
        return _REDIS_LEVELS[redis.group(1)], redis.group(1)
    match = _LEVEL.search(head)
    if match is None and ("[" in head or "=" in head or ":" in head):
        match = _LEVEL_FIELD.search(head)
    if match is None:
        return None
    written = match.group(1) or match.group(2)
    name = written.upper()
    return _LEVEL_NAMES.get(name, name), written


def _chunks(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) character ranges to mine: all of a small log, else head, spaced chunks and tail, on lines."""
    size = len(text)
    if size <= _MINE_ALL_CHARS:
        yield 0, size
        return
    edges = [(0, _SAMPLE_HEAD)]
    span = size - _SAMPLE_HEAD - _SAMPLE_TAIL
    for i in range(_SAMPLE_CHUNKS):
        start = _SAMPLE_HEAD + span * (i + 1) // (_SAMPLE_CHUNKS + 1)
        edges.append((start, start + _SAMPLE_CHUNK))
    edges.append((size - _SAMPLE_TAIL, size))
    for start, end in edges:
        if start > 0:
            nl = text.find("\n", start - 1, end)
            if nl < 0:
                continue
            start = nl + 1
        if end < size:
            end = text.rfind("\n", start, end) + 1
            if end <= start:
                continue
        yield start, end


def _mine(text: str, newlines_before: Callable[[int], int] | None) -> tuple[_Mined, bool]:
    mined = _Mined(TemplateMiner(), Counter(), Counter())
    line_number, pos = 1, 0
    sampled = False
    for start, end in _chunks(text):
        if start > pos:
            line_number = (
                line_number + text.count("\n", pos, start) if newlines_before is None else newlines_before(start) + 1
            )
            sampled = True
        pos = start
        chunk = text[start:end]
        # what no line of the chunk can hold is not looked for line by line (the same answers, sooner)
        binary = _BINARY.search(chunk) is not None
        requests = "HTTP/" in chunk
        for line in chunk.split("\n"):
            if pos + len(line) >= end and not line:
                break
            pos += len(line) + 1
            number, line_number = line_number, line_number + 1
            if not line.strip():
                continue
            mined.lines += 1
            if binary and _BINARY.search(line):
                mined.unreadable += 1
                continue
            head = line[:_HEAD_CHARS]
            level = _level_of(head)
            if level is not None:
                mined.levels[level[0]] += 1
            access = _ACCESS.search(line) if requests else None
            if access is not None:
                mined.statuses[access.group(1)[0] + "xx"] += 1
            stamp = _TIMESTAMP.search(head)
            if stamp is not None:
                mined.first_time = mined.first_time or stamp.group(0)
                mined.last_time = stamp.group(0)
                line = line[stamp.end() :]  # the message: what comes before and with the time varies on every line
            mined.miner.add(line, number)
        pos = max(pos, end)
    if pos < len(text):
        sampled = True
    return mined, sampled


def _is_error_line(head: str, line: str) -> str | None:
    level = _level_of(head)
    if level is not None and level[0] in _ERROR_LEVELS:
        return level[1]
    access = _ACCESS.search(line)
    if access is not None and access.group(1).startswith("5"):
        return "5xx"
    return None


def _find_error(text: str, lo: int, hi: int, *, last: bool, line_of: Callable[[int], int]) -> _Event | None:
    """The first (or last) error line starting in text[lo:hi], read in chunks from that end: it stops at the hit."""
    step = _ERROR_CHUNK
    starts = range(lo, hi, step)
    for start in reversed(starts) if last else starts:
        end = min(hi, start + step)
        if start > lo:  # whole lines: a line belongs to the chunk it starts in
            nl = text.find("\n", start - 1, end)
            if nl < 0:
                continue
            start = nl + 1
        if end < hi:
            nl = text.find("\n", end - 1, hi)
            end = hi if nl < 0 else nl
        lines = text[start:end].split("\n")
        offsets = [0]
        for piece in lines[:-1]:
            offsets.append(offsets[-1] + len(piece) + 1)
        order = range(len(lines) - 1, -1, -1) if last else range(len(lines))
        for i in order:
            line = lines[i]
            written = _is_error_line(line[:_HEAD_CHARS], line) if line else None
            if written is not None and not _BINARY.search(line):
                return _Event(line_of(start + offsets[i]), written, line)
    return None


def _line_counter(text: str, total_lines: int, newlines_before: Callable[[int], int] | None) -> Callable[[int], int]:
    if newlines_before is not None:
        return lambda pos: newlines_before(pos) + 1
    newlines = total_lines - (1 if text and not text.endswith("\n") else 0)

    def line_of(pos: int) -> int:
        if pos <= len(text) // 2:
            return text.count("\n", 0, pos) + 1
        return newlines - text.count("\n", pos) + 1

    return line_of


_EXCEPTION = re.compile(r"\b\w*(?:Error|Exception|Fatal|Panic)\b:?|\bpanic:|\bTraceback\b")


def _is_error_template(template: Template) -> bool:
    head = template.example[:_HEAD_CHARS]
    return _is_error_line(head, template.example) is not None or _EXCEPTION.search(template.text) is not None


def _template_pattern(template: Template) -> str:
    """An RE2 pattern matching every line of `template`: its literal tokens, `\\S+` for each `<*>`."""
    tokens = template.tokens
    while tokens and tokens[-1] == WILDCARD:
        tokens = tokens[:-1]
    while tokens and tokens[0] == WILDCARD:
        tokens = tokens[1:]
    parts = [r"\S+" if t == WILDCARD else regex_escape(t) for t in tokens]
    pattern = r"\s+".join(parts)
    while len(pattern) > _PATTERN_CHARS and len(parts) > 1:
        parts = parts[:-1]
        while parts and parts[-1] == r"\S+":
            parts = parts[:-1]
        pattern = r"\s+".join(parts)
    return pattern


def _cut(text: str, width: int) -> str:
    text = replace_surrogates(text.strip())
    return text if len(text) <= width else text[: width - 1] + "…"


def _levels_line(mined: _Mined, approx: str) -> str | None:
    if not mined.levels and not mined.statuses:
        return None
    parts = []
    if mined.levels:
        ordered = sorted(mined.levels.items(), key=lambda kv: (*_LEVEL_ORDER, kv[0]).index(kv[0]))
        parts.append("levels: " + ", ".join(f"{name} {approx}{n:,}" for name, n in ordered))
    if mined.statuses:
        parts.append("HTTP status: " + ", ".join(f"{k} {approx}{n:,}" for k, n in sorted(mined.statuses.items())))
    return "; ".join(parts)


def log_preview(
    text: str,
    budget: int,
    count: Callable[[str], int],
    total_lines: int,
    newlines_before: Callable[[int], int] | None = None,
) -> tuple[str, dict[str, Any]] | None:
    """(rendered, summary for the result's `shape`), or None when too little of `text` reads as a log.

    `newlines_before(pos)`: how many newlines `text[:pos]` holds, from an index of the text when there is one (else
    they are counted here: ~2 ms a 4 MB log, a third of its preview)."""
    mined, sampled = _mine(text, newlines_before)
    if mined.lines == 0 or mined.unreadable * 10 > mined.lines:
        return None
    approx = "~" if sampled else ""
    scale = total_lines / max(1, mined.lines) if sampled else 1.0
    line_of = _line_counter(text, total_lines, newlines_before)
    window = min(len(text), _ERROR_WINDOW)
    first_error = _find_error(text, 0, window, last=False, line_of=line_of)
    last_error = None
    if first_error is not None:
        last_error = _find_error(text, max(0, len(text) - window), len(text), last=True, line_of=line_of)
        if last_error is not None and last_error.line <= first_error.line:
            last_error = None if last_error.line == first_error.line else last_error

    templates = mined.miner.templates()
    # Error messages first (by level, or an exception's name), then the rest by count: what was wrong is what the
    # model usually came for, and a rare error would otherwise sit below a page of routine messages.
    templates.sort(key=lambda t: 0 if _is_error_template(t) else 1)
    sample_note = f" (mined from a sample of {plural(mined.lines, 'line')})" if sampled else ""
    facts = [f"log: {plural(total_lines, 'line')}, {plural(len(templates), 'message template')}{sample_note}"]
    levels = _levels_line(_scaled(mined, scale), approx)
    if levels:
        facts.append(levels)
    unmatched = mined.miner.unmatched
    if unmatched:
        facts.append(f"{approx}{round(unmatched * scale):,} lines too varied to share a template")
    if mined.first_time and mined.last_time:
        facts.append(f"time: {mined.first_time} → {mined.last_time}")
    if first_error is not None:
        facts.append(f"first error, line {first_error.line:,}: {_cut(first_error.text, 160)}")
    if last_error is not None:
        facts.append(f"last error, line {last_error.line:,}: {_cut(last_error.text, 160)}")
    elif first_error is None:
        where = "" if len(text) <= window else f" in the first and last {window // 1_000_000} MB"
        facts.append(f"no error lines{where}")

    entries = [
        f"  {approx}{max(1, round(t.count * scale)):,}× L{t.first_line:,}: {_cut(t.text, _TEMPLATE_WIDTH)}"
        for t in templates
    ]
    calls: list[tuple[str, RetrievalCall]] = []
    if first_error is not None:
        calls.append(
            ("the first error and what follows", read_lines(first_error.line, first_error.line + _CONTEXT_AFTER))
        )
        pattern = (
            r'HTTP/[0-9.]+" 5[0-9][0-9]\b' if first_error.level == "5xx" else rf"\b{regex_escape(first_error.level)}\b"
        )
        calls.append(("every error line", search_pattern(pattern, case_sensitive=first_error.level != "5xx")))
    error_templates = [t for t in templates if _is_error_template(t)]
    picked = [*error_templates[:1], *(t for t in templates[:2] if t not in error_templates[:1])][:2]
    for template in picked:
        pattern = _template_pattern(template)
        if pattern and pattern != r"\S+":
            calls.append((f"lines like L{template.first_line:,}", search_pattern(pattern)))
    listing = fit_listing(
        facts, "message templates (count, first line):", entries, calls, budget, count, entries_noun="more templates"
    )
    data: dict[str, Any] = {
        "type": "log",
        "lines": total_lines,
        "sampled_lines": mined.lines if sampled else None,
        "levels": dict(_scaled(mined, scale).levels),
        "http_status": dict(_scaled(mined, scale).statuses) or None,
        "time_span": [mined.first_time, mined.last_time] if mined.first_time else None,
        "first_error": {"line": first_error.line, "text": _cut(first_error.text, 300)} if first_error else None,
        "last_error": {"line": last_error.line, "text": _cut(last_error.text, 300)} if last_error else None,
        # [count, first line, template]: as compact as the text (a client may show this instead of it)
        "templates": [
            [max(1, round(t.count * scale)), t.first_line, _cut(t.text, _TEMPLATE_WIDTH)]
            for t in templates[: listing.entries_shown]
        ],
        "calls": [c.as_data() for c in listing.calls],
    }
    return listing.text, data


def _scaled(mined: _Mined, scale: float) -> _Mined:
    if scale == 1.0:
        return mined
    levels = Counter({k: max(1, round(v * scale)) for k, v in mined.levels.items()})
    statuses = Counter({k: max(1, round(v * scale)) for k, v in mined.statuses.items()})
    return _Mined(mined.miner, levels, statuses, mined.lines, mined.unreadable, mined.first_time, mined.last_time)
