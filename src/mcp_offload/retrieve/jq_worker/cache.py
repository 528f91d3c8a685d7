"""The parsed-input cache: the parsed values of a worker's last few inputs, and when a new input is parsed whole.

Entries are least recently used first, bounded by count, source bytes and heap bytes (`CacheLimits`, sent with
each request). The cache owns its values: a run only ever gets its own references (see `engine.Engine.run_parsed`).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .libjq import Jv, LibJq

# Parsed jv values take 5-13x their JSON text on libjq 1.8 (measured: objects ~12x, integer arrays ~10x, floats
# ~5x). JSON Lines are parsed whole for the cache only when this estimate fits the cache: streaming them needs
# one record in memory, and a program cut short by the output cap reads only the first records.
PARSED_BYTES_PER_SOURCE_BYTE = 16


@dataclass
class CachedInput:
    """The parsed values of one stored output, kept for the next queries on it."""

    key: str
    size: int  # source bytes
    records: int  # top-level JSON values
    value: Jv  # the value itself when records == 1, else the array of all of them; owned by the cache
    cost: int  # heap bytes the parsed values hold


@dataclass(frozen=True)
class CacheLimits:
    entries: int
    input_bytes: int
    memory_bytes: int

    @classmethod
    def from_request(cls, request: dict[str, Any]) -> CacheLimits:
        return cls(
            entries=int(request.get("cache_inputs", 0)),
            input_bytes=int(request.get("cache_input_bytes", 0)),
            memory_bytes=int(request.get("cache_memory_bytes", 0)),
        )

    def admits(self, size: int, cost: int) -> bool:
        return self.entries > 0 and size <= self.input_bytes and cost <= self.memory_bytes


class InputCache:
    """Parsed inputs by key, least recently used first; bounded by count, source bytes and heap bytes."""

    def __init__(self, lib: LibJq) -> None:
        self.lib = lib
        self.entries: OrderedDict[str, CachedInput] = OrderedDict()
        self.unkept: list[Jv] = []  # values `put` did not keep: freed by `release`, once the reply is sent

    @property
    def cost(self) -> int:
        return sum(entry.cost for entry in self.entries.values())

    def get(self, key: str, size: int) -> CachedInput | None:
        entry = self.entries.get(key)
        if entry is None or entry.size != size:
            return None
        self.entries.move_to_end(key)
        return entry

    def put(self, entry: CachedInput, limits: CacheLimits) -> int:
        """Keep `entry` (owning its value) if it fits at all, evicting the oldest; returns the heap bytes freed (or
        to be freed: a value too big to keep is freed by `release`, after the reply, since freeing a parsed document
        takes about as long as the program ran on it: ~1 s per 100 MB of JSON)."""
        if not limits.admits(entry.size, entry.cost):
            self.unkept.append(entry.value)
            return entry.cost
        freed = self._drop(entry.key)
        self.entries[entry.key] = entry
        return freed + self.shrink(limits)

    def release(self) -> None:
        """Free the values `put` did not keep."""
        while self.unkept:
            self.lib.jv_free(self.unkept.pop())

    def shrink(self, limits: CacheLimits) -> int:
        freed = 0
        while self.entries and (
            len(self.entries) > limits.entries
            or sum(e.size for e in self.entries.values()) > limits.input_bytes
            or self.cost > limits.memory_bytes
        ):
            freed += self._drop(next(iter(self.entries)))
        return freed

    def clear(self, keep: str | None = None) -> int:
        return sum(self._drop(key) for key in list(self.entries) if key != keep)

    def _drop(self, key: str) -> int:
        entry = self.entries.pop(key, None)
        if entry is None:
            return 0
        self.lib.jv_free(entry.value)
        return entry.cost

    def listing(self) -> list[list[Any]]:
        """[key, records, cost] per entry, oldest first: the server mirrors this to route and to skip sending."""
        return [[entry.key, entry.records, entry.cost] for entry in self.entries.values()]


def should_parse_whole(request: dict[str, Any], size: int, program: str, limits: CacheLimits) -> bool:
    """Whether to parse a new input whole (to run on, then cache) instead of streaming it.

    A JSON document is one value, parsed whole before the program starts either way. JSON Lines stream one record
    at a time, and a program cut short by the output cap reads only the first ones: they are parsed whole only when
    they would fit the cache, and never for a program that reads the stream itself.
    """
    if not limits.admits(size, 0) or "input_" in program:
        return False
    if request.get("kind") == "json":
        return True
    return "input" not in program and size * PARSED_BYTES_PER_SOURCE_BYTE <= limits.memory_bytes
