"""A stdio client that probes `server/discover` and then opens the handshake anyway is served in the handshake era.

The SDK decides a connection's protocol era once, by its first request: a `server/discover` probe opens a 2026-07-28
connection, and an `initialize` after it is refused (-32022, "the initialize handshake is not accepted"). GitHub
Copilot CLI (1.0.102, clientInfo `copilot-cli`) does exactly that: it probes, then sends `initialize` on the same
pipe, gets the refusal and gives up on the server, offering its model none of our tools.

`ProbeThenHandshake` sits in front of the server's read stream. While the only requests on the connection have been
`server/discover` probes, an `initialize` ends the 2026-07-28 serving loop (it sees the end of its input; it keeps no
state between requests, so nothing is lost) and is handed, first, to a new loop, which the SDK serves in the
handshake era. A probe still being answered when `initialize` comes (a client that does not wait for it) is answered
first. Any other request commits the connection to the era it is in, as before: a 2026-07-28 client that
probes and then sends enveloped requests never notices this module, and neither does a handshake client that never
probes.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from mcp_offload.serve.stream_front import ReceiveFront, StreamFront

DISCOVER = "server/discover"


class ProbeThenHandshake(ReceiveFront):
    """The server's read stream, ended once (and `restart` set) when `initialize` follows nothing but probes."""

    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._pending: SessionMessage | None = None  # the `initialize` the next serving loop starts with
        self._probed = False  # a `server/discover` came, and nothing else yet
        self._decided = False  # a request other than a probe came: the era stays as it is
        self._unanswered: set[types.RequestId] = set()  # probes the serving loop has not answered yet
        self._answered = anyio.Event()
        self.restart = False

    def keeps_open(self) -> bool:
        return self.restart  # the loop that ends for the switch leaves the pipe open for the next one

    def take_restart(self) -> bool:
        """Whether the loop that just ended should be followed by a new one (once)."""
        restart, self.restart = self.restart, False
        return restart

    async def receive(self) -> SessionMessage:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            return pending
        item: SessionMessage = await self._inner.receive()
        message = getattr(item, "message", None)
        if self._decided or not isinstance(message, types.JSONRPCRequest):
            return item
        if message.method == DISCOVER:
            self._probed = True
            self._unanswered.add(message.id)
        elif message.method == "initialize" and self._probed:
            self._pending, self._decided = item, True
            if self._unanswered:
                await self._answered.wait()
            self.restart = True
            raise anyio.EndOfStream
        else:
            self._decided = True
        return item

    def sent(self, item: SessionMessage) -> None:
        """The serving loop wrote `item`: an answer to a probe is noted."""
        message = getattr(item, "message", None)
        if self._unanswered and isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            self._unanswered.discard(message.id)
            if not self._unanswered:
                self._answered.set()


class KeepOpen(StreamFront):
    """The server's write stream, left open when a serving loop ends for the switch."""

    def __init__(self, inner: Any, reader: ProbeThenHandshake) -> None:
        super().__init__(inner)
        self._reader = reader

    def keeps_open(self) -> bool:
        return self._reader.restart

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(item)
        self._reader.sent(item)


async def serve_eras(server: Any, read: Any, write: Any, options: Any) -> None:
    """`server.run` over `(read, write)`, run again in the handshake era when a probing client opens the handshake."""
    reader = ProbeThenHandshake(read)
    writer = KeepOpen(write, reader)
    while True:
        await server.run(reader, writer, options)
        if not reader.take_restart():
            return
