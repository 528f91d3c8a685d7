"""What a stream that stands in front of the SDK's stdio stream answers like the stream itself (`StreamFront`):
`close` / `aclose` passed on to the stream behind it (unless `keeps_open()`: the pipe outlives one serving loop), and
the async context; `ReceiveFront` adds iteration over its own `receive`."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Self

import anyio
from mcp.shared.message import SessionMessage


class StreamFront:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def keeps_open(self) -> bool:
        """The stream behind stays open when this one is closed."""
        return False

    async def aclose(self) -> None:
        if not self.keeps_open():
            await self._inner.aclose()

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None and not self.keeps_open():
            close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class ReceiveFront(StreamFront):
    @property
    def last_context(self) -> Any:  # the sender's contextvars, which the SDK's dispatcher restores per message
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage:
        raise NotImplementedError

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None
