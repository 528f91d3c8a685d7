"""Flow control of a pipe written through an asyncio protocol: the stdio front's stdout (serve/stdio.py) and a stdio
upstream's stdin (proxy/transports/stdio_pipes.py).

The protocol's callbacks feed it (`pause` and `resume` from `pause_writing`/`resume_writing`, `lose` from the pipe's
end); a writer puts its bytes on the transport, then `await drained()`, which returns at once unless the transport
asked to pause, and raises the loss once the pipe is gone."""

from __future__ import annotations

import asyncio


class WriteFlow:
    def __init__(self) -> None:
        self._paused = False
        self._waiters: list[asyncio.Future[None]] = []
        self.lost: BaseException | None = None  # why the pipe is gone, once it is

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._wake()

    def lose(self, exc: BaseException) -> None:
        self.lost = exc
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def check(self) -> None:
        """Raise the loss, if the pipe is gone."""
        if self.lost is not None:
            raise self.lost

    async def drained(self) -> None:
        """Return once the pipe takes writes again (at once unless paused); raise the loss if it is gone."""
        self.check()
        while self._paused:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
            self.check()
