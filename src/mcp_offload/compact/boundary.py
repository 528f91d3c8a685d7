"""Which messages a compaction may touch: the four boundaries, and where older turns end.

- `"last-turn"`: only what is new since the user last spoke (from the last turn-opening user message on);
- `"all"`: every message;
- `("keep-first", N)`: everything but the first N messages;
- `("keep-last", N)`: everything but the last N messages.

(`{"type": "keep-first", "count": N}`, ctx-zip's spelling, is accepted too.) Tool results are offloaded only inside
the boundary. Older turns (the transcript step) are cut at turn starts only, so a tool call and its result are never
separated: from the first turn start after any kept-first messages and leading system messages, up to the start of
the current turn (and before the kept-last messages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mcp_offload.apis.message import MessageView

BoundarySpec = str | tuple[str, int] | dict[str, Any]


@dataclass(frozen=True, slots=True)
class Boundary:
    kind: str  # "last-turn" | "all" | "keep-first" | "keep-last"
    count: int = 0

    @classmethod
    def parse(cls, spec: BoundarySpec | Boundary) -> Boundary:
        if isinstance(spec, Boundary):
            return spec
        if isinstance(spec, str) and spec in ("last-turn", "all"):
            return cls(spec)
        if isinstance(spec, dict):
            spec = (spec.get("type"), spec.get("count"))  # type: ignore[assignment]  # re-checked just below
        if (
            isinstance(spec, tuple)
            and len(spec) == 2
            and spec[0] in ("keep-first", "keep-last")
            and isinstance(spec[1], int)
            and not isinstance(spec[1], bool)
            and spec[1] >= 0
        ):
            return cls(spec[0], spec[1])
        raise ValueError(
            f"boundary {spec!r} is not one of 'last-turn', 'all', ('keep-first', N), ('keep-last', N) with N >= 0"
        )

    def eligible(self, views: Sequence[MessageView]) -> range:
        """The indexes whose tool results may be offloaded."""
        n = len(views)
        if self.kind == "all":
            return range(n)
        if self.kind == "keep-first":
            return range(min(self.count, n), n)
        if self.kind == "keep-last":
            return range(max(n - self.count, 0))
        return range(current_turn_start(views), n)

    def older_turns(self, views: Sequence[MessageView]) -> range:
        """The messages a transcript may replace: whole turns before the current one, outside kept messages."""
        n = len(views)
        lo = self.count if self.kind == "keep-first" else 0
        while lo < n and views[lo].pinned:
            lo += 1
        while lo < n and not views[lo].opens_turn:
            lo += 1
        hi = current_turn_start(views)
        if self.kind == "keep-last":
            hi = min(hi, n - self.count)
            while hi > lo and not views[hi].opens_turn:  # cut at a turn start: calls stay with their results
                hi -= 1
        return range(lo, max(lo, hi))


def current_turn_start(views: Sequence[MessageView]) -> int:
    for i in range(len(views) - 1, -1, -1):
        if views[i].opens_turn:
            return i
    return 0
