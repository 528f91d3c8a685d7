"""OpenAI's own endpoint as one `Provider`: `POST /v1/chat/completions` and `POST /v1/responses`, the key in
`authorization` (`api-key` from OpenAI-compatible servers), and the base URL used as `OPENAI_BASE_URL` is
(`https://api.openai.com/v1` + `/chat/completions`), so a client path `/v1/x` goes to `<base>/x`.

Prompt-cache prices (automatic caching, no write premium; cached input as a share of the input price, from
https://platform.openai.com/docs/pricing, checked 2026-11): gpt-4o and o1 0.50, gpt-4.1, o3 and o4-mini 0.25, the
gpt-5 family 0.10; an unknown model 0.10, the case where rewriting a cached prefix pays least.
"""

from __future__ import annotations

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.openai_chat import OPENAI_CHAT
from mcp_offload.apis.responses import RESPONSES
from mcp_offload.providers.base import ApiCall, IncomingRequest, UpstreamSetting
from mcp_offload.providers.prices import CachePrices, by_model_prefix
from mcp_offload.providers.vendor import VendorProvider

DEFAULT_PRICES = CachePrices("openai", write=1.0, read=0.10)
READ_BY_MODEL = (  # longest prefix first
    ("gpt-4o", 0.50),
    ("gpt-4.1", 0.25),
    ("gpt-5", 0.10),
    ("o4-mini", 0.25),
    ("o3", 0.25),
    ("o1", 0.50),
)
_PATHS = {"/v1/chat/completions": OPENAI_CHAT, "/v1/responses": RESPONSES}


class OpenAIProvider(VendorProvider):
    name = "openai"
    title = "OpenAI"
    apis: tuple[LlmApi, ...] = (OPENAI_CHAT, RESPONSES)
    upstream = UpstreamSetting(
        "--openai-upstream",
        "MCP_OFFLOAD_OPENAI_UPSTREAM",
        "https://api.openai.com/v1",
        "OpenAI API base URL, with its /v1",
    )
    credential_headers: tuple[str, ...] = ("authorization", "api-key")

    def route(self, request: IncomingRequest) -> ApiCall | None:
        api = _PATHS.get(request.path) if request.method == "POST" else None
        return None if api is None else ApiCall(api)

    def upstream_url(self, base: str, path: str, query: str) -> str:
        rest = path[3:] if path == "/v1" or path.startswith("/v1/") else path
        return super().upstream_url(base, rest, query)

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return by_model_prefix(model, READ_BY_MODEL, provider="openai", default=DEFAULT_PRICES)
