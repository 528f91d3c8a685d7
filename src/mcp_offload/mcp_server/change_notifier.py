"""Telling connected clients that our tool/resource/prompt lists changed (the proxy relays upstream changes).

Handshake-era connections get a notification on their stream; 2026-07-28 clients hear it through
subscriptions/listen (the bus). `ListChanged` is what an extension is handed to report a change with.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from mcp.server import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)

from mcp_offload.mcp_server.scoping import MODERN_PROTOCOL, connection_of

log = logging.getLogger(__name__)


class ListChanged(Protocol):
    """Where an extension reports that the lists it contributes changed."""

    async def changed(self, *, tools: bool = False, resources: bool = False, prompts: bool = False) -> None: ...


class ChangeNotifier:
    """Pushes list_changed to every connected client: per connection, not per request (one push per client)."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._sessions: dict[object, Any] = {}  # connection → its latest session object (a new one per request)

    def track(self, ctx: ServerRequestContext[Any]) -> None:
        if ctx.protocol_version == MODERN_PROTOCOL:
            return
        conn = connection_of(ctx)
        if conn not in self._sessions:
            self._sessions[conn] = ctx.session
            conn.exit_stack.callback(self._sessions.pop, conn, None)

    async def changed(self, *, tools: bool = False, resources: bool = False, prompts: bool = False) -> None:
        events: list[tuple[bool, ToolsListChanged | ResourcesListChanged | PromptsListChanged, str]] = [
            (tools, ToolsListChanged(), "send_tool_list_changed"),
            (resources, ResourcesListChanged(), "send_resource_list_changed"),
            (prompts, PromptsListChanged(), "send_prompt_list_changed"),
        ]
        for wanted, event, method in events:
            if not wanted:
                continue
            await self.bus.publish(event)
            for session in list(self._sessions.values()):
                try:
                    await getattr(session, method)()
                except Exception:  # a client gone mid-push must not stop the others
                    log.debug("list_changed push failed", exc_info=True)
