"""SSE upstreams (the older remote transport: `GET /sse` + `POST /messages`)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from mcp import Client
from mcp.client.sse import sse_client

from mcp_offload.proxy.config import RemoteTarget
from mcp_offload.proxy.transports.base import Link, UpstreamTransport


class SseTransport(UpstreamTransport):
    def __init__(self, target: RemoteTarget, *, call_timeout_s: float) -> None:
        self.target = target

    def connect(self, link: Link) -> AbstractAsyncContextManager[Client]:
        streams = sse_client(self.target.url, headers=dict(self.target.headers), timeout=30, sse_read_timeout=3600)
        return link.client_for(streams)
