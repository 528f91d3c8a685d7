"""The cost rule: when rewriting the already-sent (cached) prefix pays, at the provider's prompt-cache prices.

Prices are multiples of the model's base input price (`CachePrices`), each provider's own, declared and cited in its
package (`Provider.cache_prices`, `mcp_offload.providers.<name>`): e.g. Anthropic writes at 1.25x and reads at 0.10x,
OpenAI and Gemini cache automatically (no write premium) and read at 0.10x-0.50x by model.

The rule. A request sends a prefix of P tokens the provider has cached (the messages up to the new tail). Rewriting
it from token position s on, saving S tokens (references instead of results), costs now
`(P - s - S) * write - (P - s) * read` more than sending it unchanged (the rest of the prefix is written to the
cache again instead of read from it), and saves `S * read` on each of the R requests still to come (they read
S tokens fewer from the cache). It pays when `(P - s - S) * write - (P - s) * read < S * read * R`. R is estimated
as the number of requests the conversation has had so far (a conversation that has run for n requests tends to
run about as many again), between 1 and `MAX_REMAINING`.

Every result after s is rewritten in the same batch (the cache is broken from s on anyway, and each one lowers the
cost), and a batch must save at least `clear_at_least` tokens, so a prefix is rewritten seldom and in large steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_offload.providers.prices import CachePrices

MAX_REMAINING = 50


def remaining_requests(requests_so_far: int) -> int:
    return max(1, min(requests_so_far, MAX_REMAINING))


def rewrite_gain(prices: CachePrices, *, prefix_tokens: int, start: int, saved: int, remaining: int) -> float:
    """What rewriting the cached prefix from `start` (saving `saved` tokens) gains over the rest of the conversation,
    in base-input-token units (> 0: it pays)."""
    suffix = max(prefix_tokens - start, 0)
    extra_now = max(suffix - saved, 0) * prices.write - suffix * prices.read
    return saved * prices.read * remaining - extra_now


@dataclass(frozen=True, slots=True)
class Candidate:
    """A part of the cached prefix that could be replaced: where it starts (tokens from the prompt's start) and what
    replacing it saves."""

    position: int
    saved: int


def best_batch(
    prices: CachePrices,
    candidates: Sequence[Candidate],
    *,
    prefix_tokens: int,
    remaining: int,
    clear_at_least: int,
) -> int | None:
    """The index of the first candidate of the batch that pays best (that candidate and every later one are
    rewritten), or None when no batch both pays and saves at least `clear_at_least` tokens."""
    best: tuple[float, int] | None = None
    saved = 0
    for i in range(len(candidates) - 1, -1, -1):  # from the end: saved = everything from i on
        saved += candidates[i].saved
        if saved < clear_at_least:
            continue
        gain = rewrite_gain(
            prices, prefix_tokens=prefix_tokens, start=candidates[i].position, saved=saved, remaining=remaining
        )
        if gain > 0 and (best is None or gain > best[0]):
            best = (gain, i)
    return None if best is None else best[1]
