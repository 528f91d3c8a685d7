"""Built passage indexes, kept in memory for the next question: an LRU bounded by the bytes the indexes hold.

Keyed like the JSON structure index by (handle, creation time, size): outputs never change once stored, and a
handle carries 130 random bits, so a key names one output of one scope. The cache is only reached after the store
has opened the output for the caller's scope (`rank.py` gets `StoredOutput`s, never handles), so one session can
never query another's index. One build per key at a time: a second question for an output being indexed waits for
that build instead of starting its own. An index evicted while a query holds it stays valid until that query ends.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_offload.retrieve.build_once_cache import BuildOnceCache, OutputKey
from mcp_offload.retrieve.ranked.fts_index import PassageIndex, build_index
from mcp_offload.store.content_index import Buffer

DEFAULT_BUDGET = 512 << 20


class IndexCache(BuildOnceCache[PassageIndex]):
    """Bounded by the bytes the indexes hold; one evicted while a query holds it is closed when that query lets go."""

    def __init__(self, budget_bytes: int = DEFAULT_BUDGET) -> None:
        super().__init__(budget_bytes, weigh=lambda index: index.nbytes)

    def get(self, key: OutputKey, load: Callable[[], Buffer]) -> PassageIndex:
        """The index of the output `key` names, built from `load()` (its bytes) unless cached."""
        return self.get_or_build(key, lambda: build_index(load()))


INDEXES = IndexCache()
