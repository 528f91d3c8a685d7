"""Both HTTP front ends speak the ASGI lifespan protocol (uvicorn runs them with `lifespan="on"`, which fails the
start otherwise): startup completes, shutdown completes, in that order, with nothing else said. The MCP service
starts its session manager there; the gateway has nothing to start (its caller owns the services and its upstream
client, which the lifespan leaves open)."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import httpx2
import pytest
from starlette.types import ASGIApp

from mcp_offload.core.services import Services
from mcp_offload.gateway.app import GatewayApp
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.gateway.upstream import ProviderClient
from mcp_offload.serve.http import HttpOptions, build_http_app


async def _lifespan(app: ASGIApp) -> list[str]:
    incoming = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
    said: list[str] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        said.append(message["type"])

    await app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send)
    return said


@pytest.mark.parametrize("front_end", ["mcp", "gateway"])
async def test_startup_and_shutdown_complete(services: Services, front_end: str) -> None:
    if front_end == "mcp":
        app: ASGIApp = build_http_app(services, HttpOptions(transport="both")).app
        assert await _lifespan(app) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        return
    upstream, options = httpx2.AsyncClient(), GatewayOptions()
    gateway = GatewayApp(services, options, upstream=ProviderClient(options.upstream, client=upstream))
    try:
        assert await _lifespan(gateway) == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
        assert not upstream.is_closed
    finally:
        await gateway.aclose()
    assert upstream.is_closed  # closed by its owner
