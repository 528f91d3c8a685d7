"""Anything the gateway does not serve as an API call (`/v1/models`, `/v1/messages/count_tokens`, files, ..., and a
body an API relays unread): relayed byte for byte to the provider that claims it (`providers.registry
.relay_provider`, or the provider whose call it was), prepared by it, the response streamed back as it arrives."""

from __future__ import annotations

import httpx2
from starlette.types import Send

from mcp_offload.gateway.exchange import Exchange
from mcp_offload.gateway.upstream import ProviderClient, request_headers, response_headers
from mcp_offload.providers.base import IncomingRequest, Provider
from mcp_offload.providers.registry import relay_provider


async def relay(
    upstream: ProviderClient,
    request: IncomingRequest,
    headers: list[tuple[str, str]],
    body: bytes,
    send: Send,
    exchange: Exchange,
    provider: Provider | None = None,
) -> None:
    provider = provider or relay_provider(request)
    url = upstream.url(provider, request.path, request.query)
    out_headers = request_headers(headers, decoded=False)
    response = await upstream.open(request.method, url, out_headers, body or None, provider=provider)
    exchange.status = response.status_code
    try:
        await send(
            {
                "type": "http.response.start",
                "status": response.status_code,
                "headers": response_headers(response.headers, decoded=False),
            }
        )
        async for chunk in response.aiter_raw():
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})
    except httpx2.HTTPError:
        exchange.report.problem = "upstream stream cut"
    finally:
        await response.aclose()
