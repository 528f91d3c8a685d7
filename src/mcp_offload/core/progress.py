"""Progress for long work: a heartbeat that reports while an operation runs, once it has run for a while.

Offloading 100 MB, searching all of a session's outputs or a slow jq program can take seconds, during which a
client that asked for progress (an MCP `progressToken`) should hear that the call is alive. The work itself runs
in a worker thread or process and cannot report as it goes, so `heartbeat` reports from the event loop instead:
nothing for the first `after_s` (short calls, the common case, send nothing), then every `every_s` the work's
own count when it has one (`done()`, e.g. outputs searched) or the seconds elapsed, with a short message.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio

# (progress, total, message): the MCP progress notification's fields; progress must increase.
ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]

AFTER_S = 1.0
EVERY_S = 1.0


@asynccontextmanager
async def heartbeat(
    progress: ProgressFn | None,
    message: str,
    *,
    total: float | None = None,
    done: Callable[[], float] | None = None,
    after_s: float | None = None,
    every_s: float | None = None,
) -> AsyncIterator[None]:
    """Report progress while the body runs, starting after `after_s` (default `AFTER_S`), then every `every_s`
    (default `EVERY_S`). Costs nothing when `progress` is None."""
    if progress is None:
        yield
        return
    report = progress
    first = AFTER_S if after_s is None else after_s
    period = EVERY_S if every_s is None else every_s
    started = time.monotonic()

    async def beat() -> None:
        await anyio.sleep(first)
        last = -1.0
        while True:
            elapsed = time.monotonic() - started
            value = done() if done is not None else round(elapsed, 1)
            if value > last:  # progress must increase from one notification to the next
                last = value
                try:
                    await report(value, total, f"{message} ({elapsed:.0f} s)")
                except Exception:  # a client gone mid-call must not fail the work
                    return
            await anyio.sleep(period)

    error: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(beat)
        try:
            yield
        except Exception as exc:  # re-raised below as itself, not wrapped in the task group's ExceptionGroup
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
