"""Streamable HTTP upstreams (`/mcp`), over one httpx2 client per connection."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_offload.proxy.config import RemoteTarget
from mcp_offload.proxy.transports.base import Link, UpstreamTransport

MAX_SSE_EVENT_BYTES = 512 * 1024 * 1024  # one event carries one whole result: allow multi-MB outputs


class StreamableHttpTransport(UpstreamTransport):
    def __init__(self, target: RemoteTarget, *, call_timeout_s: float) -> None:
        self.target = target
        self.call_timeout_s = call_timeout_s

    @asynccontextmanager
    async def connect(self, link: Link) -> AsyncIterator[Client]:
        timeout = httpx2.Timeout(30.0, read=max(300.0, self.call_timeout_s + 30.0))
        async with httpx2.AsyncClient(headers=dict(self.target.headers), timeout=timeout) as http:
            streams = streamable_http_client(self.target.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES)
            async with link.client_for(streams) as client:
                yield client
