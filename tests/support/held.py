"""`held(cm)`: an async context manager entered and exited by a task of its own, for module-scoped async fixtures.

pytest-asyncio sets up and tears down a module-scoped fixture in different tasks, and anyio's cancel scopes (the MCP
SDK client's task group) must be exited in the task that entered them. Here one task enters `cm`, hands out its value
and waits; the fixture's teardown tells it to exit. The tests use the value from their own tasks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TypeVar

T = TypeVar("T")


@asynccontextmanager
async def held(cm: AbstractAsyncContextManager[T]) -> AsyncIterator[T]:
    loop = asyncio.get_running_loop()
    entered: asyncio.Future[T] = loop.create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        try:
            async with cm as value:
                entered.set_result(value)
                await stop.wait()
        except BaseException as exc:
            if not entered.done():
                entered.set_exception(exc)
            raise

    task = loop.create_task(hold())
    try:
        yield await entered
    finally:
        stop.set()
        await task
