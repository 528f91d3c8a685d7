"""SSE sessions (http/sse_sessions.py, sse_expiry.py): the registry by id, activity recorded per request, idle
expiry that waits for calls in flight. (Over the wire: test_http_limits.py, test_http_scoping.py.)
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import anyio
from starlette.requests import Request

from mcp_offload.serve.http.sse_expiry import expire_when_idle
from mcp_offload.serve.http.sse_sessions import SseSession, SseSessions

SESSION_ID = "0123456789abcdef" * 2


def _ctx(request_id: int | None, session_id: str) -> Any:
    scope = {"type": "http", "method": "POST", "query_string": f"session_id={session_id}".encode(), "headers": []}
    return SimpleNamespace(request_id=request_id, request=Request(scope))


async def test_requests_of_a_registered_session_count_as_its_activity() -> None:
    sessions, session = SseSessions(), SseSession(id=SESSION_ID, last_active=0.0)
    seen: list[int] = []

    async def handler(ctx: Any) -> None:
        seen.append(session.in_flight)

    await sessions(_ctx(1, SESSION_ID), handler)  # not registered yet: untouched
    assert session.last_active == 0.0
    sessions.add(session)
    assert sessions.get(SESSION_ID) is session
    await sessions(_ctx(2, SESSION_ID), handler)
    await sessions(_ctx(None, SESSION_ID), handler)  # a notification is no activity
    await sessions(_ctx(3, "f" * 32), handler)  # another session's request
    assert seen == [0, 1, 0, 0] and session.in_flight == 0
    assert time.monotonic() - session.last_active < 5
    sessions.forget(session)
    assert sessions.get(SESSION_ID) is None and sessions.by_id == {}


async def test_idle_expiry_waits_for_calls_in_flight_then_cancels_the_session() -> None:
    busy = SseSession(id=SESSION_ID, last_active=0.0, in_flight=1)
    with anyio.move_on_after(0.3):
        await expire_when_idle(busy, 0.05)
    assert not busy.cancel.cancel_called  # a long call is not idleness
    busy.in_flight = 0
    busy.last_active = time.monotonic()
    started = time.monotonic()
    with anyio.fail_after(5):
        await expire_when_idle(busy, 0.2)
    assert busy.cancel.cancel_called and time.monotonic() - started >= 0.2
