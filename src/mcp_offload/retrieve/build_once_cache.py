"""An in-process LRU of things built from one stored output's bytes (a structure index, a passage index), built
once per output: a second caller for an output being built waits for that build instead of starting its own.

Keyed by (handle, creation time, size): outputs never change once stored, and a handle carries 130 random bits, so
a key names one output of one scope. Bounded by a budget in the units `weigh` gives each entry (1 each: a count;
`nbytes`: memory); the newest entry is always kept, whatever it weighs.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

OutputKey = tuple[str, float, int]  # (handle, created, size): one stored output's bytes

Built = TypeVar("Built")


class BuildOnceCache(Generic[Built]):
    def __init__(self, budget: int, weigh: Callable[[Built], int]) -> None:
        self.budget = budget
        self.weigh = weigh
        self.lock = threading.Lock()
        self.items: OrderedDict[OutputKey, Built] = OrderedDict()
        self.held = 0
        self.building: dict[OutputKey, threading.Event] = {}

    def get_or_build(self, key: OutputKey, build: Callable[[], Built]) -> Built:
        """The entry for `key`, from `build()` unless cached or being built (then this waits for that build, and
        builds it here only if that one failed)."""
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
            built = build()  # outside the lock
            with self.lock:
                self.items[key] = built
                self.held += self.weigh(built)
                while self.held > self.budget and len(self.items) > 1:
                    _, old = self.items.popitem(last=False)
                    self.held -= self.weigh(old)  # an evicted entry stays valid for whoever still holds it
            return built
        finally:
            with self.lock:
                del self.building[key]
            done.set()

    def clear(self) -> None:
        with self.lock:
            self.items.clear()
            self.held = 0
