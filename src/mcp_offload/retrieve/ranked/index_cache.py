"""Built passage indexes, kept in memory for the next question: an LRU bounded by the bytes the indexes hold.

Keyed like the JSON structure index by (handle, creation time, size): outputs never change once stored, and a
handle carries 130 random bits, so a key names one output of one scope. The cache is only reached after the store
has opened the output for the caller's scope (`rank.py` gets `StoredOutput`s, never handles), so one session can
never query another's index. One build per key at a time: a second question for an output being indexed waits for
that build instead of starting its own. An index evicted while a query holds it stays valid until that query ends.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from mcp_offload.retrieve.ranked.fts_index import PassageIndex, build_index
from mcp_offload.store.content_index import Buffer

log = logging.getLogger(__name__)

Key = tuple[str, float, int]  # (handle, created, size)
DEFAULT_BUDGET = 512 << 20
WARM_QUEUE = 4


class IndexCache:
    def __init__(self, budget_bytes: int = DEFAULT_BUDGET) -> None:
        self.budget = budget_bytes
        self.lock = threading.Lock()
        self.items: OrderedDict[Key, PassageIndex] = OrderedDict()
        self.held = 0
        self.building: dict[Key, threading.Event] = {}
        self.warming = 0
        self._warmer: ThreadPoolExecutor | None = None

    def cached(self, key: Key) -> bool:
        with self.lock:
            return key in self.items

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

    def warm(self, key: Key, data: Buffer) -> bool:
        """Build in a background thread (at most `WARM_QUEUE` queued); False when skipped."""
        with self.lock:
            if key in self.items or key in self.building or self.warming >= WARM_QUEUE:
                return False
            self.warming += 1
            if self._warmer is None:
                self._warmer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ranked-index")
            warmer = self._warmer
        warmer.submit(self._warm, key, data)
        return True

    def _warm(self, key: Key, data: Buffer) -> None:
        try:
            self.get(key, lambda: data)
        except Exception:  # the first question builds it instead, and reports what goes wrong
            log.warning("building a ranked-search index in the background failed", exc_info=True)
        finally:
            with self.lock:
                self.warming -= 1

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.held = 0


INDEXES = IndexCache()
