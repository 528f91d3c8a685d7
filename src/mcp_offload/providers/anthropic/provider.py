"""Anthropic's own endpoint as one `Provider`: `POST /v1/messages` (with `?beta=true` in the query), the key in
`x-api-key` (or an OAuth bearer in `authorization`), and the base URL used as `ANTHROPIC_BASE_URL` is
(`https://api.anthropic.com` + `/v1/messages`).

Prompt-cache prices (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching#pricing, checked 2026-11):
a 5-minute cache write costs 1.25x the base input price, a 1-hour one 2x, a cache read 0.1x, for every model.
The gateway prices at the 5-minute cache (what a `cache_control` marker without `ttl` asks for).
"""

from __future__ import annotations

from mcp_offload.apis.anthropic import ANTHROPIC_MESSAGES
from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.base import ApiCall, IncomingRequest, UpstreamSetting
from mcp_offload.providers.prices import CachePrices
from mcp_offload.providers.vendor import VendorProvider

FIVE_MINUTES = CachePrices("anthropic 5-minute cache", write=1.25, read=0.10)
ONE_HOUR = CachePrices("anthropic 1-hour cache", write=2.0, read=0.10)


class AnthropicProvider(VendorProvider):
    name = "anthropic"
    title = "Anthropic"
    apis: tuple[LlmApi, ...] = (ANTHROPIC_MESSAGES,)
    upstream = UpstreamSetting(
        "--anthropic-upstream", "MCP_OFFLOAD_ANTHROPIC_UPSTREAM", "https://api.anthropic.com", "Anthropic API base URL"
    )
    credential_headers: tuple[str, ...] = ("x-api-key", "authorization")

    def route(self, request: IncomingRequest) -> ApiCall | None:
        if request.method == "POST" and request.path == "/v1/messages":
            return ApiCall(ANTHROPIC_MESSAGES)
        return None

    def relay_claim(self, request: IncomingRequest) -> int:
        headers = request.headers
        return (
            1
            if request.path.startswith("/v1/messages") or "anthropic-version" in headers or "x-api-key" in headers
            else 0
        )

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return FIVE_MINUTES
