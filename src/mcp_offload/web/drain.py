"""A shutdown's drain: `Drain` (draining once shutdown has begun; the work in flight, which the shutdown lets
finish within a grace period: `server.DrainingServer`), and `DrainGate`, an ASGI middleware that counts HTTP
requests into it and, once draining, refuses new ones (503, `shutting_down`: retry, on another instance) so the
work in flight can only go down.

The gateway counts its HTTP requests (`DrainGate`); the MCP service counts MCP requests instead, which outlive
their HTTP request on SSE (`serve/http/in_flight.py`, `shutdown_gate.py`, over the same `Drain`).
"""

from __future__ import annotations

from collections.abc import Iterable

import anyio
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.web.open_paths import OpenPaths
from mcp_offload.web.refusal import SHUTTING_DOWN, Refusal, Refuse


class Drain:
    """`draining` once `close()` is called; `count` units of work in flight (`enter` / `leave`); `wait_idle`."""

    def __init__(self) -> None:
        self.draining = False
        self.count = 0
        self._idle: anyio.Event | None = None  # made by a waiter (a shutdown), set when the count reaches 0

    def close(self) -> None:
        self.draining = True

    def enter(self) -> None:
        self.count += 1

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0 and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def wait_idle(self, grace_s: float) -> bool:
        """Wait until nothing is in flight (True) or `grace_s` passes (False)."""
        with anyio.move_on_after(grace_s):
            while self.count:
                if self._idle is None:
                    self._idle = anyio.Event()
                await self._idle.wait()
            return True
        return False


class DrainGate:
    def __init__(self, app: ASGIApp, drain: Drain, refuse: Refuse, *, open_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.drain = drain
        self.refuse = refuse
        self._open = OpenPaths(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self._open.includes(scope):
            await self.app(scope, receive, send)
            return
        if self.drain.draining:
            refusal = Refusal(503, SHUTTING_DOWN, "This server is shutting down; retry (another instance answers).")
            await self.refuse(scope, refusal)(scope, receive, send)
            return
        self.drain.enter()
        try:
            await self.app(scope, receive, send)
        finally:
            self.drain.leave()
