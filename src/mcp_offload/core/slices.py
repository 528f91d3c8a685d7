"""Work on the event loop in slices: a long run of small synchronous steps gives the loop back every few milliseconds,
so a big request's bookkeeping (a view of each of its messages) never holds a shared server's other clients for
longer than one step plus `SLICE_S`.

    views = await in_slices(lambda i: history.view(messages[i], i), len(messages))
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.lowlevel

T = TypeVar("T")

SLICE_S = 0.002  # the longest run of steps between two turns of the loop


async def in_slices(step: Callable[[int], T], count: int, slice_s: float = SLICE_S) -> list[T]:
    """`[step(0), ..., step(count - 1)]`, in order, yielding to the event loop whenever `slice_s` has passed since it
    last did (a short run never yields: small requests pay nothing)."""
    out: list[T] = []
    started = time.perf_counter()
    for i in range(count):
        out.append(step(i))
        if time.perf_counter() - started >= slice_s:
            await anyio.lowlevel.checkpoint()
            started = time.perf_counter()
    return out
