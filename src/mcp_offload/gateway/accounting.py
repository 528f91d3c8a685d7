"""Per-session gateway counters in the store, and the summary `mcp-offload stats` and the status page show.

The server adds one `TurnCounters` per client turn (`record_turn`): what the rewrite kept out, what retrieval pulled
back, loops and fail-open events, and the upstream's own usage as one normalised figure set (each API's
`Dialect.figures`: uncached input, cache reads, cache writes, output; no vendor counter names). From those and the
provider's cache prices (`Provider.cache_prices`) each turn also adds two cost figures, in thousandths of a base input
token:

- actual: `CachePrices.input_cost` (`uncached + cache_read * read + cache_write * write`) as the upstream reported;
- direct (what going direct would have cost): actual + the kept-out tokens as cache reads + the newly offloaded
  tokens' one cache write premium (a result sent direct is written to the cache once, then read on every turn).

The summary reports both and their ratio, per session and in total. The counters are increments (atomic on both
backends), so several gateway instances add up.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from mcp_offload.cachesafe.record import DecisionRecord, open_record
from mcp_offload.providers.prices import CachePrices

if TYPE_CHECKING:
    from mcp_offload.cachesafe.session import CacheSafeSession
    from mcp_offload.core.services import Services

MILLI = 1000


@dataclass(frozen=True, slots=True)
class TurnCounters:
    """What one client turn did; every integer field is added to the session's counters."""

    prices: CachePrices  # the provider's cache prices for the request's model (not a counter)
    requests: int = 1  # client requests
    upstream_calls: int = 0  # upstream requests made for them (loops included)
    tokens_kept_out: int = 0  # Rewrite.tokens_kept_out: result tokens not sent (references subtracted)
    tokens_offloaded: int = 0  # tokens of outputs newly stored this turn
    tokens_pulled_back: int = 0  # tokens of retrieval answers sent upstream
    retrieval_calls: int = 0
    loops: int = 0  # follow-up upstream calls made by the transparent loop
    fail_open: int = 0
    offloaded: int = 0  # outputs newly stored this turn (len(Rewrite.offloaded))
    input_tokens: int = 0  # upstream usage: uncached input tokens (UsageFigures.uncached_tokens)
    cache_read_tokens: int = 0  # input tokens read from the provider's prompt cache
    cache_write_tokens: int = 0  # input tokens written to it
    output_tokens: int = 0

    def counts(self) -> dict[str, int]:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "prices"}
        prices = self.prices
        actual = prices.input_cost(
            uncached=self.input_tokens, cache_read=self.cache_read_tokens, cache_write=self.cache_write_tokens
        )
        premium = max(prices.write - prices.read, 0)
        direct = actual + self.tokens_kept_out * prices.read + self.tokens_offloaded * premium
        out["cost_actual_milli"] = round(actual * MILLI)
        out["cost_direct_milli"] = round(direct * MILLI)
        return out


async def record_turn(services: Services, session: CacheSafeSession, counters: TurnCounters) -> None:
    """Add one turn's counters to the session's. When the store is down this raises `StoreUnavailable`, and the
    counts (a fail-open event among them) are kept in memory and added with the session's next successful call."""
    await open_record(services).add_counts(session, counters.counts())


@dataclass(frozen=True, slots=True)
class SessionFigures:
    session: str
    last_used: float
    counters: dict[str, int]

    @property
    def cost_ratio(self) -> float | None:
        """Actual cost / direct cost (under 1: the gateway saved money)."""
        direct = self.counters.get("cost_direct_milli", 0)
        return round(self.counters.get("cost_actual_milli", 0) / direct, 4) if direct else None

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "cost_ratio": self.cost_ratio}


async def session_summary(record: DecisionRecord, session_key: str | None = None) -> dict[str, Any]:
    """`{"sessions": [per session: counters, cost ratio], "totals": {…, "cost_ratio"}}` from `record` (`open_record`,
    `record_beside`), most recent first; one session with `session_key`. Record entries without counters are not
    conversations the gateway served (a credential's handle index, the compression service's hash index) and are
    left out."""
    listed = await record.backend.sessions()
    if session_key is not None:
        listed = [(key, when) for key, when in listed if key == session_key]
    counted = [(key, when, await record.backend.counters(key)) for key, when in listed]
    sessions = [SessionFigures(key, when, counters) for key, when, counters in counted if counters]
    totals: dict[str, int] = {}
    for figures in sessions:
        for name, value in figures.counters.items():
            totals[name] = totals.get(name, 0) + value
    overall = SessionFigures("total", max((s.last_used for s in sessions), default=0.0), totals)
    return {
        "sessions": [s.to_dict() for s in sessions],
        "totals": {**totals, "sessions": len(sessions), "cost_ratio": overall.cost_ratio},
    }
