"""Provider prompt-cache prices, and the cost rule: when rewriting the already-sent (cached) prefix pays.

Prices are multiples of the model's base input price:

    Anthropic, 5-minute cache:  write 1.25x, read 0.10x  (1-hour cache: write 2.0x)
    OpenAI (automatic caching): no write premium (1.0x), read 0.50x (gpt-4o), 0.25x (gpt-4.1, o3, o4-mini),
                                0.10x (gpt-5 family); unknown models: 0.10x, the case where rewriting pays least
    Gemini (implicit caching):  no write premium (1.0x; no storage charge for implicit caching), read 0.10x for the
                                2.5 and 3 families, 0.25x for 2.0 and older; unknown models: 0.10x

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

MAX_REMAINING = 50


@dataclass(frozen=True, slots=True)
class CachePrices:
    """Multiples of the base input price: writing a token to the cache, reading one from it."""

    provider: str
    write: float
    read: float


ANTHROPIC_5M = CachePrices("anthropic 5-minute cache", write=1.25, read=0.10)
ANTHROPIC_1H = CachePrices("anthropic 1-hour cache", write=2.0, read=0.10)
OPENAI_DEFAULT = CachePrices("openai", write=1.0, read=0.10)
_OPENAI_READ = (  # longest prefix first
    ("gpt-4o", 0.50),
    ("gpt-4.1", 0.25),
    ("gpt-5", 0.10),
    ("o4-mini", 0.25),
    ("o3", 0.25),
    ("o1", 0.50),
)


# Gemini implicit caching, as multiples of the model's input price. Sources (checked 2026-11): the Gemini API
# pricing page https://ai.google.dev/gemini-api/docs/pricing lists "context caching price" per model: Gemini 2.5 Pro
# $0.125 vs $1.25 input, 2.5 Flash $0.03 vs $0.30, 2.5 Flash-Lite $0.01 vs $0.10, Gemini 3 Pro Preview $0.20 vs
# $2.00 (all 10 %); Gemini 2.0 Flash $0.025 vs $0.10 (25 %). Google Cloud's context cache overview
# (https://cloud.google.com/vertex-ai/generative-ai/docs/context-cache/context-cache-overview): "Implicit caching
# provides a 90% discount on cached tokens compared to standard input tokens", with no storage cost. Implicit caching
# needs a prefix of at least 1,024 tokens (2.5 Flash, 3 Flash) or 4,096 (2.5 Pro, 3 Pro)
# (https://ai.google.dev/gemini-api/docs/caching).
GEMINI_DEFAULT = CachePrices("gemini", write=1.0, read=0.10)
_GEMINI_READ = (  # by model name prefix (a path's model, "models/" taken off)
    ("gemini-3", 0.10),
    ("gemini-2.5", 0.10),
    ("gemini-2.0", 0.25),
    ("gemini-1.5", 0.25),
)


def prices_for(api: str, model: object, *, one_hour: bool = False) -> CachePrices:
    """The cache prices of the provider behind `api` for `model` (a request's `model` field; Gemini: the path's)."""
    if api == "anthropic":
        return ANTHROPIC_1H if one_hour else ANTHROPIC_5M
    if api == "gemini":
        name = model.removeprefix("models/") if isinstance(model, str) else ""
        for prefix, read in _GEMINI_READ:
            if name.startswith(prefix):
                return CachePrices(f"gemini {prefix}", write=1.0, read=read)
        return GEMINI_DEFAULT
    name = model if isinstance(model, str) else ""
    for prefix, read in _OPENAI_READ:
        if name.startswith(prefix):
            return CachePrices(f"openai {prefix}", write=1.0, read=read)
    return OPENAI_DEFAULT


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


def cost_of_request(prices: CachePrices, *, uncached: int, cache_read: int, cache_write: int) -> float:
    """A request's input cost in base-input-token units."""
    return uncached + cache_read * prices.read + cache_write * prices.write
