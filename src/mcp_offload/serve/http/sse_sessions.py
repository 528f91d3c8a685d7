"""The live SSE sessions: `SseSession` (one stream: its id, activity, the scope that ends it) and `SseSessions`
(the registry by id, plus the server middleware that records each session's requests as activity).

The SSE endpoint (`sse.py`) registers a session once its endpoint event names it and forgets it when the stream
ends; idle expiry (`sse_expiry.py`) reads the activity recorded here.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from starlette.requests import Request


@dataclass
class SseSession:
    """One SSE connection: its id (from the endpoint event), activity, and the scope that ends it."""

    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    id: str | None = None
    known: anyio.Event = field(default_factory=anyio.Event)
    last_active: float = field(default_factory=time.monotonic)
    in_flight: int = 0

    def touch(self) -> None:
        self.last_active = time.monotonic()


class SseSessions:
    """The SSE sessions by id; as a server middleware, counts each session's requests and marks it active."""

    def __init__(self) -> None:
        self.by_id: dict[str, SseSession] = {}

    def add(self, session: SseSession) -> None:
        if session.id is not None:
            self.by_id[session.id] = session

    def forget(self, session: SseSession) -> None:
        if session.id is not None:
            self.by_id.pop(session.id, None)

    def get(self, session_id: str) -> SseSession | None:
        return self.by_id.get(session_id)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        session = self._session_of(ctx) if ctx.request_id is not None else None
        if session is None:
            return await call_next(ctx)
        session.in_flight += 1
        try:
            return await call_next(ctx)
        finally:
            session.in_flight -= 1
            session.touch()

    def _session_of(self, ctx: ServerRequestContext[Any, Any]) -> SseSession | None:
        request = ctx.request
        if not self.by_id or not isinstance(request, Request):
            return None
        session_id = request.query_params.get("session_id")
        return self.by_id.get(session_id) if session_id else None
