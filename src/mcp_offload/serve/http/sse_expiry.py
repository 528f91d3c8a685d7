"""Idle expiry for SSE sessions (the SDK's SSE transport has no such knob; streamable HTTP has its own).

A session with no request in flight and no activity for `idle_s` is ended by cancelling its scope, which closes
its stream.
"""

from __future__ import annotations

import time

import anyio

from mcp_offload.serve.http.sse_sessions import SseSession


async def expire_when_idle(session: SseSession, idle_s: float) -> None:
    """Cancel `session` once it has been idle for `idle_s` (checked every quarter of it, at most every 5 s)."""
    while True:
        await anyio.sleep(min(idle_s / 4, 5.0))
        if session.in_flight == 0 and time.monotonic() - session.last_active >= idle_s:
            session.cancel.cancel()
            return
