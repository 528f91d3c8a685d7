"""The one interface between supervising an upstream and reaching it: `UpstreamTransport.connect`.

Like httpx's transport base class, one method at the cut: `connect(link)` opens one connection and yields a live
SDK `Client`; leaving it closes the connection (and stops a child process). The supervisor (`proxy/upstream.py`)
does not know which transport it holds: it is chosen once, from the config target (`transports.transport_for`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import anyio
from mcp import Client

from mcp_offload.proxy.transports.raw_channel import RawChannel


class UpstreamUnavailable(Exception):
    """The upstream cannot answer this call (down, crashed, timed out). The message is written for the model."""


ClientFactory = Callable[[Any], Client]  # an SDK transport (params, URL, stream context) → our configured Client


@dataclass(slots=True)
class Link:
    """What the supervisor gives one connection attempt, and what a transport may report back."""

    name: str  # the upstream's, for log lines
    client_for: ClientFactory
    lost: anyio.Event  # set it when this connection is known to be dead (e.g. a stdio child's stderr hit EOF)
    stderr: deque[str]  # the child's last stderr lines, if it has a stderr (for errors and the status tool)
    stderr_done: anyio.Event | None = None  # set by the transport once every stderr line has been read
    raw: RawChannel | None = None  # set by a transport whose connection also takes requests as JSON lines


class UpstreamTransport:
    """Opens connections to one upstream. Subclasses implement `connect`."""

    def connect(self, link: Link) -> AbstractAsyncContextManager[Client]:
        """One connection: entered, the `Client` is initialized and usable; left, it is closed."""
        raise NotImplementedError
