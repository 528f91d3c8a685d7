"""How the proxy reaches an upstream: one `UpstreamTransport` per config target kind, chosen once here."""

from __future__ import annotations

from mcp_offload.proxy.config import StdioTarget, UpstreamSpec
from mcp_offload.proxy.transports.base import Link, UpstreamTransport, UpstreamUnavailable
from mcp_offload.proxy.transports.sse import SseTransport
from mcp_offload.proxy.transports.stdio import StdioTransport
from mcp_offload.proxy.transports.streamable_http import StreamableHttpTransport

__all__ = ["Link", "UpstreamTransport", "UpstreamUnavailable", "transport_for"]


def transport_for(spec: UpstreamSpec, *, call_timeout_s: float) -> UpstreamTransport:
    """The transport for the spec's target: stdio, SSE, or streamable HTTP."""
    target = spec.target
    if isinstance(target, StdioTarget):
        return StdioTransport(target, call_timeout_s=call_timeout_s)
    remote: dict[str, type[SseTransport | StreamableHttpTransport]] = {
        "sse": SseTransport,
        "http": StreamableHttpTransport,
    }
    return remote[target.transport](target, call_timeout_s=call_timeout_s)
