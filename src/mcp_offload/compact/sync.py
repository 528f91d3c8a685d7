"""`Compactor`: the blocking twin of `AsyncCompactor`, the same methods run on an event loop thread of its own."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Concatenate, ParamSpec, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from mcp_offload.compact.budget import CountTokens
from mcp_offload.compact.compactor import AsyncCompactor
from mcp_offload.compact.request import CompactReport
from mcp_offload.core.services import Services

P = ParamSpec("P")
R = TypeVar("R")


def _blocking(
    method: Callable[Concatenate[AsyncCompactor, P], Awaitable[R]],
) -> Callable[Concatenate[Compactor, P], R]:
    """`method` of `AsyncCompactor` as a blocking method of `Compactor`, run on its event loop thread: one signature
    and docstring for both (type checkers and IDEs see the async method's parameters, `help()` its text)."""

    def blocking(self: Compactor, /, *args: P.args, **kwargs: P.kwargs) -> R:
        result: R = self._call(method, self._async, *args, **kwargs)
        return result

    functools.update_wrapper(blocking, method)
    blocking.__qualname__ = f"Compactor.{method.__name__}"
    return blocking


class Compactor:
    """The sync twin of `AsyncCompactor` (same methods, same arguments), over its own event loop thread."""

    def __init__(
        self,
        store: str | None = None,
        session: str | None = None,
        *,
        count_tokens: CountTokens | None = None,
        **settings: Any,
    ) -> None:
        self._portal_cm: AbstractContextManager[BlockingPortal] = start_blocking_portal()
        self._portal = self._portal_cm.__enter__()
        self._closed = False
        try:
            self._async: AsyncCompactor = self._portal.call(self._make, store, session, count_tokens, settings)
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            raise

    @staticmethod
    async def _make(
        store: str | None, session: str | None, count_tokens: CountTokens | None, settings: dict[str, Any]
    ) -> AsyncCompactor:
        return AsyncCompactor(store, session, count_tokens=count_tokens, **settings)

    @property
    def session(self) -> str:
        return self._async.session

    @property
    def last_report(self) -> CompactReport | None:
        return self._async.last_report

    @property
    def services(self) -> Services:
        return self._async.services

    def _call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        async def run() -> Any:
            return await fn(*args, **kwargs)

        return self._portal.call(run)

    compact = _blocking(AsyncCompactor.compact)
    usage = _blocking(AsyncCompactor.usage)
    run_tool = _blocking(AsyncCompactor.run_tool)

    def tools(self, format: str) -> list[dict[str, Any]]:
        return self._async.tools(format)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._portal.call(self._async.aclose)
        finally:
            self._portal_cm.__exit__(None, None, None)

    def __enter__(self) -> Compactor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
