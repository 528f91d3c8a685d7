"""Anything the gateway does not serve as an API call (`/v1/models`, `/v1/messages/count_tokens`, files, ..., and a
body an API relays unread): relayed byte for byte to the provider that claims it (`apis.registry
.provider_for_request`), the response streamed back as it arrives."""

from __future__ import annotations

import httpx2
from starlette.types import Send

from mcp_offload.apis.registry import provider_for_request
from mcp_offload.gateway.exchange import Exchange
from mcp_offload.gateway.upstream import ProviderClient, request_headers, response_headers


async def relay(
    upstream: ProviderClient,
    method: str,
    path: str,
    query: str,
    headers: list[tuple[str, str]],
    body: bytes,
    send: Send,
    exchange: Exchange,
) -> None:
    provider = provider_for_request(path, dict(headers), query)
    url = upstream.url(provider, path, query)
    response = await upstream.open(method, url, request_headers(headers, decoded=False), body or None)
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
