"""Built passage indexes, kept in memory for the next question: an LRU bounded by the bytes the indexes hold.

Keyed like the JSON structure index by (handle, creation time, size): outputs never change once stored, and a
handle carries 130 random bits, so a key names one output of one scope. The cache is only reached after the store
has opened the output for the caller's scope (`rank.py` gets `StoredOutput`s, never handles), so one session can
never query another's index. One build per key at a time: a second question for an output being indexed waits for
that build instead of starting its own. An index evicted while a query holds it stays valid until that query ends.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from mcp_offload.retrieve.ranked.fts_index import PassageIndex, build_index
from mcp_offload.store.content_index import Buffer

Key = tuple[str, float, int]  # (handle, created, size)
DEFAULT_BUDGET = 512 << 20


class IndexCache:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET) -> None:
        self.budget = budget_bytes
        self.lock = threading.Lock()
        self.items: OrderedDict[Key, PassageIndex] = OrderedDict()
        self.held = 0
        self.building: dict[Key, threading.Event] = {}

    def get(self, key: Key, load: Callable[[], Buffer]) -> PassageIndex:
        """The index of the output `key` names, built from `load()` (its bytes) unless cached."""
        while True:
            with self.lock:
                found = self.items.get(key)
                if found is not None:
                    self.items.move_to_end(key)
                    return found
                running = self.building.get(key)
                if running is None:
                    done = self.building[key] = threading.Event()
                    break
            running.wait()
        try:
            built = build_index(load())  # outside the lock
            with self.lock:
                self.items[key] = built
                self.held += built.nbytes
                while self.held > self.budget and len(self.items) > 1:
                    _, old = self.items.popitem(last=False)
                    self.held -= old.nbytes  # closed when the last query holding it lets go
            return built
        finally:
            with self.lock:
                del self.building[key]
            done.set()

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.held = 0


INDEXES = IndexCache()
