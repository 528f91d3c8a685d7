"""`DrainingServer`: uvicorn for both HTTP front ends, with a drain phase before its own shutdown and a plain exit
on SIGINT/SIGTERM.

The shutdown, in order: stop accepting connections; close the drain (health says "draining", new work is refused
in the front end's format); let the work in flight finish, bounded by the grace period; `after_drain` (the MCP
service closes its long-lived SSE streams here); then uvicorn's own shutdown (which closes the connections).

uvicorn's own `capture_signals` re-raises the signal once the server has stopped, so a SIGTERM'd process would die by
that signal instead of exiting 0 after its graceful shutdown. Here the handlers are installed for the run and the
previous ones put back afterwards, with nothing re-raised; outside the main thread (tests, embedding) none are
installed.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn

from mcp_offload.web.drain import Drain

log = logging.getLogger(__name__)


class DrainingServer(uvicorn.Server):
    def __init__(
        self,
        config: uvicorn.Config,
        drain: Drain,
        grace_s: float,
        *,
        after_drain: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.drain = drain
        self.grace_s = grace_s
        self.after_drain = after_drain

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connections
        self.drain.close()  # no new work
        log.info("shutting down: waiting up to %.0f s for %d in-flight call(s)", self.grace_s, self.drain.count)
        if not await self.drain.wait_idle(self.grace_s):
            log.warning("shutting down: %d call(s) still running after the grace period", self.drain.count)
        if self.after_drain is not None:
            self.after_drain()
        await super().shutdown(sockets)
