"""Prompt-cache prices, as multiples of the model's base input price: what each provider package declares
(`Provider.cache_prices`, with its sources) and what the cost rule (`cachesafe/cost.py`) and the accounting read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CachePrices:
    """Multiples of the base input price: writing a token to the cache, reading one from it."""

    provider: str  # which price this is, for people ("anthropic 5-minute cache", "openai gpt-4.1")
    write: float
    read: float

    def input_cost(self, *, uncached: int, cache_read: int, cache_write: int) -> float:
        """A request's input cost in base-input-token units."""
        return uncached + cache_read * self.read + cache_write * self.write


def by_model_prefix(
    model: str, reads: Sequence[tuple[str, float]], *, provider: str, default: CachePrices
) -> CachePrices:
    """The price of the first `(prefix, read)` row `model` starts with (no write premium: automatic caching), else
    `default`."""
    for prefix, read in reads:
        if model.startswith(prefix):
            return CachePrices(f"{provider} {prefix}", write=1.0, read=read)
    return default
