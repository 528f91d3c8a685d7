"""A uvicorn server that takes SIGINT/SIGTERM as a plain shutdown: the HTTP transport and the gateway both run on it.

uvicorn's own `capture_signals` re-raises the signal once the server has stopped, so a SIGTERM'd process would die
by that signal instead of exiting 0 after its graceful shutdown. Here the handlers are installed for the run and the
previous ones put back afterwards, with nothing re-raised; outside the main thread (tests, embedding) none are
installed.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

import uvicorn


class ExitZeroServer(uvicorn.Server):
    """uvicorn that stops on SIGINT/SIGTERM without re-raising the signal (the process exits 0)."""

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
