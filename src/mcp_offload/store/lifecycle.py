"""Lifecycle policy shared by every backend: how long outputs live, how much a store may hold, what goes first.

Both backends ask this module the same questions, so they agree by construction:

- *Expiry.* An output lives `ttl_s` seconds from the moment it was stored (reads do not extend it: "kept for
  3 days" means what it says). An expired output is removed on sight (open, meta, list, put, sweep).
- *Quotas.* A scope (one session) may hold at most `scope_max_bytes` content bytes and `scope_max_outputs`
  outputs; the whole store at most `max_bytes` / `max_outputs`. Bytes are content bytes plus the bytes of
  the output's sidecars (a search index kept with it, about half its size; the small content index adds
  ~0.1 % and is not counted). A put that would go over evicts least-recently-used outputs first, in its own
  scope for the scope quota, then anywhere for the global quota (`plan_eviction`). An output that a reader has
  open is never a victim; if the put cannot fit even after evicting everything evictable, it fails with
  `StoreFull` and nothing is evicted. A sidecar is a cache, outputs are data: a sidecar that does not fit
  (`sidecar_fits`) is not kept, and nothing is ever evicted to make room for one.
- *Tombstones.* A removed output leaves a tiny per-scope marker (why it went) for `tombstone_ttl_s`, so that
  the same session gets `ExpiredHandle` ("expired after 3 days" / "evicted") instead of the bare
  `UnknownHandle`. Another session never sees a tombstone: it gets `UnknownHandle`, exactly as for a handle
  that never existed, so tombstones leak nothing across sessions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from mcp_offload.errors import ExpiredHandle, StoreFull
from mcp_offload.settings import Settings

DAY = 86400.0
_DEFAULTS = Settings()  # the defaults are written once, in settings.py


@dataclass(frozen=True, slots=True)
class StoreLimits:
    """The lifecycle knobs of a store (one instance per store; both backends read the same fields)."""

    ttl_s: float = _DEFAULTS.store_ttl_s
    scope_max_bytes: int = _DEFAULTS.store_session_max_bytes
    scope_max_outputs: int = _DEFAULTS.store_session_max_outputs
    max_bytes: int = _DEFAULTS.store_max_bytes
    max_outputs: int = _DEFAULTS.store_max_outputs
    tombstone_ttl_s: float = _DEFAULTS.store_ttl_s
    tombstones_per_scope: int = 1000
    sweep_interval_s: float = _DEFAULTS.store_sweep_interval_s

    def __post_init__(self) -> None:
        for name in ("ttl_s", "scope_max_bytes", "scope_max_outputs", "max_bytes", "max_outputs"):
            if getattr(self, name) <= 0:
                raise ValueError(f"store limit {name} must be positive")

    @classmethod
    def from_settings(cls, settings: Settings) -> StoreLimits:
        """The limits a `Settings` asks for (tombstones are kept as long as outputs live)."""
        return cls(
            ttl_s=settings.store_ttl_s,
            scope_max_bytes=settings.store_session_max_bytes,
            scope_max_outputs=settings.store_session_max_outputs,
            max_bytes=settings.store_max_bytes,
            max_outputs=settings.store_max_outputs,
            tombstone_ttl_s=settings.store_ttl_s,
            sweep_interval_s=settings.store_sweep_interval_s,
        )


@dataclass(frozen=True, slots=True)
class StoreUsage:
    """Bytes (content and sidecars) and number of outputs (of one scope, or of the whole store)."""

    bytes: int = 0
    count: int = 0


@dataclass(frozen=True, slots=True)
class EvictionCandidate:
    """An output that eviction may consider. `last_used` is only informative: candidates come in LRU order."""

    scope: str
    handle: str
    size: int  # the bytes its removal frees: content and sidecars
    last_used: float = 0.0


@dataclass(frozen=True, slots=True)
class SweepReport:
    """What one `sweep()` removed."""

    expired: int = 0
    debris: int = 0
    tombstones: int = 0


class NeedMoreCandidates(Exception):
    """`plan_eviction` ran out of candidates in a list that the caller said was only a prefix."""


def plan_eviction(
    size: int,
    scope: str,
    scope_usage: StoreUsage,
    total_usage: StoreUsage,
    scope_lru: Iterable[EvictionCandidate],
    global_lru: Iterable[EvictionCandidate],
    limits: StoreLimits,
    *,
    pinned: Callable[[EvictionCandidate], bool] = lambda c: False,
    complete: bool = True,
) -> list[EvictionCandidate]:
    """Which outputs to evict (least recently used first) so that a new output of `size` bytes fits.

    `scope_lru` / `global_lru` list the scope's / the store's outputs, least recently used first. `pinned`
    says whether a reader has a candidate open (asked only for candidates actually considered). Raises
    `StoreFull` when the output cannot fit even after evicting every unpinned output: nothing is to be
    evicted then. With `complete=False` the lists may be prefixes: running out raises `NeedMoreCandidates`.
    """
    check_fits_at_all(size, limits)
    victims: list[EvictionCandidate] = []
    chosen: set[tuple[str, str]] = set()
    s_bytes, s_count = scope_usage.bytes, scope_usage.count
    t_bytes, t_count = total_usage.bytes, total_usage.count

    def scope_fits() -> bool:
        return s_bytes + size <= limits.scope_max_bytes and s_count + 1 <= limits.scope_max_outputs

    def total_fits() -> bool:
        return t_bytes + size <= limits.max_bytes and t_count + 1 <= limits.max_outputs

    for passes_scope, candidates in ((True, scope_lru), (False, global_lru)):
        fits = scope_fits if passes_scope else total_fits
        for cand in candidates:
            if fits():
                break
            key = (cand.scope, cand.handle)
            if key in chosen or pinned(cand):
                continue
            chosen.add(key)
            victims.append(cand)
            t_bytes -= cand.size
            t_count -= 1
            if cand.scope == scope:
                s_bytes -= cand.size
                s_count -= 1
        if not fits():
            if not complete:
                raise NeedMoreCandidates
            what = "this session's" if passes_scope else "the store's"
            raise StoreFull(
                f"{what} outputs fill the store's size limit and the ones that could make room are being read "
                "right now; nothing was stored. Retry in a moment, or delete outputs you no longer need."
            )
    return victims


def fits(size: int, scope_usage: StoreUsage, total_usage: StoreUsage, limits: StoreLimits) -> bool:
    """Whether one more output of `size` bytes fits without evicting anything."""
    return (
        scope_usage.bytes + size <= limits.scope_max_bytes
        and scope_usage.count + 1 <= limits.scope_max_outputs
        and total_usage.bytes + size <= limits.max_bytes
        and total_usage.count + 1 <= limits.max_outputs
    )


def sidecar_fits(grow: int, scope_usage: StoreUsage, total_usage: StoreUsage, limits: StoreLimits) -> bool:
    """Whether a sidecar may add `grow` bytes to an output already stored, without evicting anything."""
    return scope_usage.bytes + grow <= limits.scope_max_bytes and total_usage.bytes + grow <= limits.max_bytes


def check_fits_at_all(size: int, limits: StoreLimits) -> None:
    """`StoreFull` for an output larger than a quota: no eviction could ever make room for it."""
    for limit, what in ((limits.scope_max_bytes, "per session"), (limits.max_bytes, "in total")):
        if size > limit:
            raise StoreFull(
                f"this output is {size:,} bytes, more than the store may hold {what} ({limit:,} bytes); "
                "nothing was stored. Make the output smaller (filter or page it at the source) and retry."
            )


def is_expired(stored_at: float, now: float, limits: StoreLimits) -> bool:
    return now >= stored_at + limits.ttl_s


def describe_duration(seconds: float) -> str:
    """3 days / 5 hours / 90 seconds: the unit a person would use."""
    for unit, length in (("day", DAY), ("hour", 3600.0), ("minute", 60.0)):
        if seconds >= length and (seconds % length == 0 or seconds >= 2 * length):
            count = round(seconds / length)
            return f"{count} {unit}{'s' if count != 1 else ''}"
    amount: float = round(seconds, 3) if seconds < 10 else round(seconds)
    return f"{amount:g} second{'s' if amount != 1 else ''}"


def gone_error(handle: str, reason: str, limits: StoreLimits) -> ExpiredHandle:
    """The error for a handle of *this* scope whose output was removed by the lifecycle."""
    if reason == "expired":
        return ExpiredHandle(
            f"output {handle} expired after {describe_duration(limits.ttl_s)} (outputs are kept that long); "
            "re-run the tool that produced it to get the content again."
        )
    return ExpiredHandle(
        f"output {handle} was evicted to stay under the store's size limits (least recently used outputs go "
        "first); re-run the tool that produced it to get the content again."
    )
