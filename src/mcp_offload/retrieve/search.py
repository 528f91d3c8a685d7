"""Search inside stored outputs: the driver that runs the matcher over outputs and keeps the tally.

Three parts, as ripgrep keeps them apart:
- the matcher, `pattern.py`: the pattern validated, compiled for RE2 and described (`CompiledPattern`);
- the searcher, `scan.py`: every match of a compiled pattern in stored bytes, in calls of bounded size, exactly as
  RE2 would find them on the whole text, on the stored UTF-8 bytes themselves (bytes or an mmap: no copy, never
  decoded whole); a pattern that matches "\\n" explicitly (`\\n`, `\\s`, `[^x]`) may span lines, and the match is
  reported on the line where it starts;
- the printer, `positions.py`: each kept match's line number, character offsets and shown lines.

This module checks the options, runs the scan over one output or several (newest first) under one count and time
budget, and keeps the first `max_results` matches. Matches are non-overlapping and leftmost-first, like Python's
`re.finditer`. Counting goes on after `max_results` matches up to `max_total_count` or the time budget; past that
the total is a lower bound.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from mcp_offload.errors import SearchError
from mcp_offload.retrieve.pattern import CompiledPattern
from mcp_offload.retrieve.positions import Locator, Match, build_match
from mcp_offload.retrieve.scan import Scan, Searchable
from mcp_offload.store.base import StoredOutput

log = logging.getLogger(__name__)

HARD_MAX_RESULTS = 500  # settings.search_max_results_cap
MAX_CONTEXT_LINES = 10
MIN_LINE_CHARS = 20
MAX_LINE_CHARS = 10_000


@dataclass(frozen=True)
class SearchOptions:
    case_sensitive: bool = False
    literal: bool = False
    max_results: int = 50
    context_lines: int = 0
    line_chars: int = 300
    max_total_count: int = 100_000
    time_budget_s: float = 10.0


@dataclass(frozen=True)
class SearchResult:
    matches: tuple[Match, ...]
    total_matches: int  # exact when total_is_exact, else a lower bound
    total_is_exact: bool
    truncated: bool  # there are (or may be) matches beyond those returned
    outputs_searched: int


def _checked(options: SearchOptions, max_results_cap: int) -> SearchOptions:
    if options.max_results < 1:
        raise SearchError("max_results must be at least 1.")
    if not 0 <= options.context_lines <= MAX_CONTEXT_LINES:
        raise SearchError(f"context_lines must be between 0 and {MAX_CONTEXT_LINES}.")
    if not MIN_LINE_CHARS <= options.line_chars <= MAX_LINE_CHARS:
        raise SearchError(f"line_chars must be between {MIN_LINE_CHARS} and {MAX_LINE_CHARS:,}.")
    if options.max_total_count < 1 or options.time_budget_s <= 0:
        raise SearchError("max_total_count and time_budget_s must be positive.")
    if options.max_results > max_results_cap:
        options = replace(options, max_results=max_results_cap)
    return options


def _searchable(output: StoredOutput) -> Searchable:
    data = output.contiguous()  # bytes / mmap as they are; a lazy Redis view is fetched once (we run in a thread)
    return bytes(data) if isinstance(data, memoryview) else data  # a memoryview has no find/rfind: one copy


class _Tally:
    """Matches and counts across one or more outputs, under one shared budget."""

    def __init__(self, options: SearchOptions) -> None:
        self.options = options
        self.deadline = time.monotonic() + options.time_budget_s
        self.matches: list[Match] = []
        self.total = 0
        self.exact = True
        self.searched = 0

    def add(self, output: StoredOutput, pattern: CompiledPattern) -> bool:
        """Search one output; False once the budget (count or time) is spent."""
        options = self.options
        data = _searchable(output)
        locator = Locator(data, output.index, options.line_chars)
        scan = Scan(data, pattern, self.deadline)
        if time.monotonic() > self.deadline:
            self.exact = False
            return False
        self.searched += 1
        for start, stop in scan:
            if self.total >= options.max_total_count:
                self.exact = False  # there is at least one more
                return False
            self.total += 1
            if len(self.matches) < options.max_results:
                self.matches.append(build_match(output, locator, start, stop, options.context_lines))
        if not scan.finished:
            self.exact = False
            log.info("search stopped by its time budget after %d matches", self.total)
            return False
        return True

    def result(self) -> SearchResult:
        return SearchResult(
            matches=tuple(self.matches),
            total_matches=self.total,
            total_is_exact=self.exact,
            truncated=not self.exact or self.total > len(self.matches),
            outputs_searched=self.searched,
        )


def search_output(
    output: StoredOutput,
    pattern: CompiledPattern,
    options: SearchOptions,
    *,
    max_results_cap: int = HARD_MAX_RESULTS,
) -> SearchResult:
    """Search one text/json/jsonl output. Sync and CPU-bound: run it in a worker thread."""
    if output.meta.kind == "blob":
        raise SearchError(
            f"{output.meta.handle} is binary ({output.meta.mime_type or 'application/octet-stream'}) and cannot be "
            "searched; search a text or JSON output instead."
        )
    tally = _Tally(_checked(options, max_results_cap))
    tally.add(output, pattern)
    return tally.result()


def search_outputs(
    outputs: Iterable[StoredOutput],
    pattern: CompiledPattern,
    options: SearchOptions,
    *,
    max_results_cap: int = HARD_MAX_RESULTS,
) -> SearchResult:
    """Search several outputs in the order given (newest first), skipping binary ones; matches are merged in
    that order up to max_results, and the total counts all outputs under one count and time budget."""
    tally = _Tally(_checked(options, max_results_cap))
    for output in outputs:
        if output.meta.kind == "blob":
            continue
        if not tally.add(output, pattern):
            break
    return tally.result()
