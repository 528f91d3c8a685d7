"""The providers' prompt caches, simulated per session (credential + model), so cache behaviour is a number.

Prompts are segment lists (prompt.py). A prefix is identified by a hash chain over its segments, so "these two
requests share their first k segments" is one dict lookup per position.

Anthropic (documented rules, simplified where noted):
* Only prefixes ending at a `cache_control` breakpoint are written (top-level `cache_control` = automatic caching:
  a breakpoint on the last block), and only when the prefix holds at least `anthropic_min_tokens` (1024 as for
  Sonnet/Opus; configurable). Up to 4 breakpoints (the validator enforces it).
* A read looks for an entry at each breakpoint and at up to `lookback_blocks` (20) block boundaries before it; the
  longest hit wins and is refreshed. `cache_read_input_tokens` = tokens of that hit, `cache_creation_input_tokens` =
  tokens from the hit to the last breakpoint written, `input_tokens` = the rest after the last breakpoint.
* Entries live `ttl_s` (5 min, or 1 h for `ttl: "1h"`) after their last use.

Gemini (implicit caching): as OpenAI, the longest prefix shared with a live entry, at part granularity, once at
least `gemini_min_tokens` (1024, as for Gemini 2.5 Flash) match, reported exactly (`cachedContentTokenCount`).

OpenAI (automatic caching): every request's whole prompt is cached; a request reads the longest prefix it shares
with a live entry, reported in 128-token steps once at least 1024 tokens match (`cached_tokens`); no write charge.
Prefixes are compared at message / input-item granularity: a change inside a message misses from that message on
(at most one message more than the provider would miss; never a hit the provider would not give).

Diagnostics kept besides the provider's numbers: whether the session's previous prompt is a prefix of this one
(`extends_previous`) and the longest prefix shared with any earlier prompt of the session, TTL ignored
(`seen_prefix_tokens`): a gateway that rewrites an already-sent prefix shows up there at once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from llm_upstream.prompt import TTL_SECONDS, Segment

OPENAI_MIN_TOKENS = 1024
OPENAI_STEP_TOKENS = 128


class _Diagnosis(TypedDict):
    """How a request relates to the session's previous ones (the tail of a CacheUsage)."""

    extends_previous: bool
    seen_prefix_tokens: int


@dataclass(frozen=True, slots=True)
class CacheUsage:
    """What one request cost, in the provider's terms (both families' fields filled)."""

    prompt_tokens: int  # every input token of the request
    cache_read: int  # Anthropic cache_read_input_tokens / OpenAI cached_tokens
    cache_write: int  # Anthropic cache_creation_input_tokens (0 on OpenAI)
    cache_write_1h: int  # of which written with ttl 1h
    uncached: int  # Anthropic input_tokens (prompt - read - write); OpenAI prompt - cached
    extends_previous: bool
    seen_prefix_tokens: int


@dataclass(slots=True)
class SessionStats:
    """Per-session counters, cumulative."""

    requests: int = 0
    prompt_tokens: int = 0
    cache_read: int = 0
    cache_write: int = 0
    uncached: int = 0
    output_tokens: int = 0
    prefix_breaks: int = 0  # requests that did not extend the session's previous prompt

    @property
    def read_share(self) -> float:
        return self.cache_read / self.prompt_tokens if self.prompt_tokens else 0.0


@dataclass(slots=True)
class _Session:
    entries: dict[bytes, float] = field(default_factory=dict)  # prefix hash -> expiry (monotonic seconds)
    seen: set[bytes] = field(default_factory=set)  # every prefix hash ever sent (no TTL)
    previous_end: bytes | None = None
    stats: SessionStats = field(default_factory=SessionStats)


def _chain(segments: list[Segment]) -> tuple[list[bytes], list[int]]:
    """Prefix hashes P[0..n] and cumulative tokens T[0..n]."""
    hashes, totals = [b""], [0]
    for seg in segments:
        hashes.append(hashlib.blake2b(hashes[-1] + seg.digest, digest_size=16).digest())
        totals.append(totals[-1] + seg.tokens)
    return hashes, totals


class PromptCache:
    def __init__(
        self,
        *,
        ttl_s: float = 300.0,
        anthropic_min_tokens: int = 1024,
        lookback_blocks: int = 20,
        gemini_min_tokens: int = 1024,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl_s = ttl_s
        self.anthropic_min_tokens = anthropic_min_tokens
        self.lookback_blocks = lookback_blocks
        self.gemini_min_tokens = gemini_min_tokens
        self.clock = clock
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()

    def stats(self, session: str) -> SessionStats:
        with self._lock:
            return self._sessions.setdefault(session, _Session()).stats

    def sessions(self) -> dict[str, SessionStats]:
        with self._lock:
            return {key: s.stats for key, s in self._sessions.items()}

    def clear(self) -> None:
        with self._lock:
            self._sessions.clear()

    def _ttl(self, ttl: str | None) -> float:
        return TTL_SECONDS["1h"] if ttl == "1h" else self.ttl_s

    def anthropic(self, session: str, segments: list[Segment]) -> CacheUsage:
        hashes, totals = _chain(segments)
        n = len(segments)
        now = self.clock()
        with self._lock:
            state = self._sessions.setdefault(session, _Session())
            breakpoints = [k + 1 for k, seg in enumerate(segments) if seg.breakpoint_ttl]
            read_at = 0
            for bp in breakpoints:
                for q in range(bp, max(bp - self.lookback_blocks, 1) - 1, -1):
                    if q <= read_at:
                        break
                    if state.entries.get(hashes[q], -1.0) > now:
                        read_at = q
                        break
            if read_at:
                ttl = max(self._ttl(segments[read_at - 1].breakpoint_ttl), state.entries[hashes[read_at]] - now)
                state.entries[hashes[read_at]] = now + ttl
            write_end, write_1h, mark = read_at, 0, read_at
            for bp in breakpoints:
                if bp <= read_at or totals[bp] < self.anthropic_min_tokens:
                    continue
                ttl_name = segments[bp - 1].breakpoint_ttl
                state.entries[hashes[bp]] = max(state.entries.get(hashes[bp], -1.0), now + self._ttl(ttl_name))
                if ttl_name == "1h":
                    write_1h += totals[bp] - totals[mark]
                mark = write_end = bp
            usage = CacheUsage(
                prompt_tokens=totals[n],
                cache_read=totals[read_at],
                cache_write=totals[write_end] - totals[read_at],
                cache_write_1h=write_1h,
                uncached=totals[n] - totals[write_end],
                **self._diagnose(state, hashes, totals),
            )
            self._count(state, usage)
            return usage

    def gemini(self, session: str, segments: list[Segment], min_tokens: int | None = None) -> CacheUsage:
        minimum = self.gemini_min_tokens if min_tokens is None else min_tokens
        return self.openai(session, segments, min_tokens=minimum, step_tokens=1)

    def openai(
        self,
        session: str,
        segments: list[Segment],
        retention_s: float | None = None,
        *,
        min_tokens: int = OPENAI_MIN_TOKENS,
        step_tokens: int = OPENAI_STEP_TOKENS,
    ) -> CacheUsage:
        hashes, totals = _chain(segments)
        n = len(segments)
        now = self.clock()
        with self._lock:
            state = self._sessions.setdefault(session, _Session())
            q = 0
            while q < n and state.entries.get(hashes[q + 1], -1.0) > now:
                q += 1
            matched = totals[q]
            cached = (matched // step_tokens) * step_tokens if matched >= min_tokens else 0
            expiry = now + (retention_s or self.ttl_s)
            for h in hashes[1:]:
                if state.entries.get(h, -1.0) < expiry:
                    state.entries[h] = expiry
            usage = CacheUsage(
                prompt_tokens=totals[n],
                cache_read=cached,
                cache_write=0,
                cache_write_1h=0,
                uncached=totals[n] - cached,
                **self._diagnose(state, hashes, totals),
            )
            self._count(state, usage)
            return usage

    @staticmethod
    def _diagnose(state: _Session, hashes: list[bytes], totals: list[int]) -> _Diagnosis:
        extends = state.previous_end is None or state.previous_end in hashes
        seen = 0
        for k in range(1, len(hashes)):
            if hashes[k] not in state.seen:
                break
            seen = totals[k]
        state.seen.update(hashes[1:])
        state.previous_end = hashes[-1]
        return _Diagnosis(extends_previous=extends, seen_prefix_tokens=seen)

    @staticmethod
    def _count(state: _Session, usage: CacheUsage) -> None:
        s = state.stats
        s.requests += 1
        s.prompt_tokens += usage.prompt_tokens
        s.cache_read += usage.cache_read
        s.cache_write += usage.cache_write
        s.uncached += usage.uncached
        s.prefix_breaks += 0 if usage.extends_previous else 1
