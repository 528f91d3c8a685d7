"""The durable savings record: what offloading saved, per day (UTC), per upstream server and tool, across sessions
and restarts. The same honest accounting as the proxy's per-session `proxy_status` (proxy/stats.py):

- results seen / offloaded: every proxied result, and every direct `offload` call (server "");
- tokens kept out: the full size of what was offloaded minus the reference the model got instead;
- tokens pulled back: the text the retrieval tools returned (server "", tool = the retrieval tool);
- passed by handle (proxy mode): a stored output an upstream tool got as an argument (`offload://outputs/<handle>`,
  proxy/handle_arguments.py), counted on the upstream server and tool: the output's tokens minus the reference's,
  which the model would otherwise have had to write into its call;
- net saved = kept out + passed by handle - pulled back.

`SavingsRecord` is the interface the server writes to (`add`, never raising, buffered so the hot path pays one dict
update) and the `stats` command and `/stats` read from (`read`). The backends (fs.py, redis.py) only write a batch
of counter increments and read the counters of some days back; `open_savings` in `__init__` picks one from the
store location. `summarize` turns rows into the figures every front end shows.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

log = logging.getLogger(__name__)

COUNTERS = (
    "results_seen",
    "results_offloaded",
    "tokens_kept_out",
    "retrievals",
    "tokens_retrieved",
    "arguments_by_handle",
    "tokens_passed_by_handle",
)
DIRECT = ""  # the server name of our own tools (direct offload, retrieval)
MAX_DAYS = 400
FLUSH_INTERVAL_S = 1.0


@dataclass(frozen=True, slots=True, order=True)
class SavingsKey:
    day: str  # YYYY-MM-DD, UTC
    server: str  # the upstream server name, or "" for our own tools
    tool: str  # the upstream tool name, or ours (offload, read_large_output, …)


@dataclass(slots=True)
class SavingsRow:
    """The counters of one key (a day, a server, a tool), or a sum of several."""

    results_seen: int = 0
    results_offloaded: int = 0
    tokens_kept_out: int = 0
    retrievals: int = 0
    tokens_retrieved: int = 0
    arguments_by_handle: int = 0  # stored outputs passed to upstream tools as `offload://outputs/<handle>`
    tokens_passed_by_handle: int = 0  # their tokens minus the references' (what the calls did not have to carry)

    @property
    def tokens_net(self) -> int:
        return self.tokens_kept_out + self.tokens_passed_by_handle - self.tokens_retrieved

    def add(self, counts: dict[str, int] | SavingsRow) -> None:
        values = counts.as_counts() if isinstance(counts, SavingsRow) else counts
        for name, value in values.items():
            if name in COUNTERS:
                setattr(self, name, getattr(self, name) + int(value))

    def as_counts(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}

    def as_dict(self) -> dict[str, int]:
        return {**self.as_counts(), "tokens_net_saved": self.tokens_net}


def utc_day(now: float) -> str:
    return _day_name(int(now // 86_400))  # Unix time has exactly 86,400 s a day; counted on every tool call


@functools.lru_cache(maxsize=4)
def _day_name(day: int) -> str:
    return datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%d")


def last_days(days: int, now: float) -> list[str]:
    """The `days` most recent UTC days, oldest first, ending today."""
    today = datetime.fromtimestamp(now, UTC).date()
    days = max(1, min(days, MAX_DAYS))
    return [(today - timedelta(days=back)).isoformat() for back in range(days - 1, -1, -1)]


Batch = dict[SavingsKey, dict[str, int]]


class SavingsRecord:
    """Buffered counters in front of a backend. Subclasses implement `_write` and `_read`; this base is also the
    do-nothing record (nothing written, nothing read) used where no store location is known."""

    enabled = False  # True for a record that keeps something (callers may skip counting otherwise)

    def __init__(self, *, clock: Callable[[], float] = time.time, flush_interval_s: float = FLUSH_INTERVAL_S) -> None:
        self.clock = clock
        self.flush_interval_s = flush_interval_s
        self._pending: Batch = {}
        self._last_flush = time.monotonic()
        self._failing = False

    async def add(self, server: str, tool: str, **counts: int) -> None:
        """Count one event. Never raises: a failing backend is logged (once until it recovers) and skipped."""
        try:
            key = SavingsKey(utc_day(self.clock()), server, tool)
            entry = self._pending.setdefault(key, {})
            for name, value in counts.items():
                if value:
                    entry[name] = entry.get(name, 0) + value
            if time.monotonic() - self._last_flush >= self.flush_interval_s:
                await self.flush()
        except Exception:  # the record must never fail a tool call
            log.warning("savings record: could not count an event", exc_info=True)

    async def flush(self) -> None:
        """Write what is pending. Never raises; on failure the batch is dropped (counters, not data)."""
        batch, self._pending = self._pending, {}
        self._last_flush = time.monotonic()
        batch = {key: counts for key, counts in batch.items() if counts}
        if not batch:
            return
        try:
            await self._write(batch)
        except Exception as exc:
            if not self._failing:
                log.warning("savings record: could not write %d counter(s): %s", len(batch), exc)
            self._failing = True
        else:
            self._failing = False

    async def read(self, days: int = 30) -> dict[SavingsKey, SavingsRow]:
        """The counters of the last `days` UTC days (this process's pending ones included)."""
        wanted = last_days(days, self.clock())
        rows: dict[SavingsKey, SavingsRow] = {}
        for key, counts in await self._read(wanted):
            rows.setdefault(key, SavingsRow()).add(counts)
        for key, counts in self._pending.items():
            if key.day in wanted:
                rows.setdefault(key, SavingsRow()).add(counts)
        return rows

    async def aclose(self) -> None:
        await self.flush()

    # -- the backend ------------------------------------------------------------------------------------------
    async def _write(self, batch: Batch) -> None:
        """Add every count of `batch` to the durable counters."""

    async def _read(self, days: Sequence[str]) -> Iterable[tuple[SavingsKey, dict[str, int]]]:
        """Every (key, counts) stored for `days`; a key may come several times (its counts add up)."""
        return ()


@dataclass(slots=True)
class DaySummary:
    day: str
    rows: list[tuple[str, str, SavingsRow]] = field(default_factory=list)  # (server, tool, counters)
    total: SavingsRow = field(default_factory=SavingsRow)


def summarize(rows: dict[SavingsKey, SavingsRow], days: Sequence[str]) -> tuple[list[DaySummary], SavingsRow]:
    """Per day (every day of `days`, empty ones included, oldest first): its rows sorted and their total; and the
    grand total."""
    by_day = {day: DaySummary(day) for day in days}
    total = SavingsRow()
    for key in sorted(rows):
        summary = by_day.get(key.day)
        if summary is None:
            continue
        summary.rows.append((key.server, key.tool, rows[key]))
        summary.total.add(rows[key])
        total.add(rows[key])
    return list(by_day.values()), total


def summary_json(rows: dict[SavingsKey, SavingsRow], days: Sequence[str]) -> dict[str, Any]:
    """The figures as JSON (`stats --json` and `/stats` give this same document)."""
    summaries, total = summarize(rows, days)
    return {
        "days": [
            {
                "day": s.day,
                "rows": [{"server": server, "tool": tool, **row.as_dict()} for server, tool, row in s.rows],
                "total": s.total.as_dict(),
            }
            for s in summaries
        ],
        "total": total.as_dict(),
    }
