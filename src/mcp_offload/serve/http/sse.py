"""The SSE endpoint: GET /sse opens one MCP connection per stream (both eras), POST /messages/ feeds it.

Around the SDK's `SseServerTransport` it adds a cap on open streams (503), refusal while shutting down, the session
registry (`sse_sessions.py`) that the POST side and idle expiry (`sse_expiry.py`) use, and a JSON-RPC 404 for a
message to a session that has ended.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

import anyio
import mcp.types as types
from mcp.server.runner import serve_dual_era_loop
from mcp.server.sse import SseServerTransport
from starlette.types import Message, Receive, Scope, Send

from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.serve.http.options import HttpOptions
from mcp_offload.serve.http.rpc_errors import rpc_error
from mcp_offload.serve.http.shutdown_gate import ShutdownGate
from mcp_offload.serve.http.sse_expiry import expire_when_idle
from mcp_offload.serve.http.sse_sessions import SseSession, SseSessions

log = logging.getLogger(__name__)

_ENDPOINT_ID = re.compile(rb"session_id=([0-9a-f]{32})")


class SseEndpoint:
    """GET /sse: one MCP connection per stream, both eras, with a session cap and idle expiry."""

    def __init__(
        self,
        server: OffloadServer,
        transport: SseServerTransport,
        gate: ShutdownGate,
        sessions: SseSessions,
        options: HttpOptions,
        lifespan_state: Callable[[], Any],
    ) -> None:
        self.server = server
        self.transport = transport
        self.gate = gate
        self.sessions = sessions
        self.options = options
        self.lifespan_state = lifespan_state
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.gate.draining:
            await self.gate.refusal()(scope, receive, send)
            return
        if self.open >= self.options.max_sessions:
            log.warning("refusing a new SSE session: %d are open", self.open)
            await rpc_error(503, types.INTERNAL_ERROR, "Too many open sessions")(scope, receive, send)
            return
        session = SseSession()

        async def watch_endpoint(message: Message) -> None:
            if session.id is None and message["type"] == "http.response.body":
                found = _ENDPOINT_ID.search(message.get("body", b""))
                if found:
                    session.id = found.group(1).decode("ascii")
                    self.sessions.add(session)
                    session.known.set()
            await send(message)

        self.open += 1
        entered = False
        try:
            async with self.transport.connect_sse(scope, receive, watch_endpoint) as (read, write):
                entered = True
                try:
                    with anyio.move_on_after(10):
                        await session.known.wait()
                    if session.id is None:
                        log.warning("SSE stream closed: its endpoint event was never sent")
                        return
                    with session.cancel:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(expire_when_idle, session, self._idle)
                            await serve_dual_era_loop(
                                self.server,
                                read,
                                write,
                                lifespan_state=self.lifespan_state(),
                                session_id=session.id,
                                init_options=self.server.create_initialization_options(),
                            )
                            tg.cancel_scope.cancel()
                finally:
                    self.sessions.forget(session)  # from now on its POSTs get 404, while the stream winds down
                if session.cancel.cancelled_caught:
                    log.info("SSE session %s expired after %.0f s idle", (session.id or "")[:8], self._idle)
        except ValueError:
            if entered:
                raise
            # connect_sse refused the request and already answered (421 / 403 from the Host/Origin checks)
        finally:
            self.open -= 1
            self.sessions.forget(session)

    @property
    def _idle(self) -> float:
        return self.options.session_idle_timeout

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /messages/?session_id=…: a live session's message (activity), else 404 like the SDK's."""
        found = _ENDPOINT_ID.search(scope.get("query_string", b""))
        session = self.sessions.get(found.group(1).decode("ascii")) if found else None
        if found and session is None and scope["method"] == "POST":
            await rpc_error(404, types.INVALID_REQUEST, "Session not found")(scope, receive, send)
            return
        if session is not None:
            session.touch()
        try:
            await self.transport.handle_post_message(scope, receive, send)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The session ended between the lookup and the hand-off; the SDK had already answered 202.
            log.info("dropped a message for an SSE session that just ended")
