"""The Gemini API's own endpoint as one `Provider` (routes: `routes.py`), its base URL used as
`GOOGLE_GEMINI_BASE_URL` is (`https://generativelanguage.googleapis.com` + `/v1beta/models/…`).

Implicit-caching prices, as multiples of the model's input price. Sources (checked 2026-11): the Gemini API pricing
page https://ai.google.dev/gemini-api/docs/pricing lists "context caching price" per model: Gemini 2.5 Pro $0.125 vs
$1.25 input, 2.5 Flash $0.03 vs $0.30, 2.5 Flash-Lite $0.01 vs $0.10, Gemini 3 Pro Preview $0.20 vs $2.00 (all
10 %); Gemini 2.0 Flash $0.025 vs $0.10 (25 %). Google Cloud's context cache overview
(https://cloud.google.com/vertex-ai/generative-ai/docs/context-cache/context-cache-overview): "Implicit caching
provides a 90% discount on cached tokens compared to standard input tokens", with no storage cost. Implicit caching
needs a prefix of at least 1,024 tokens (2.5 Flash, 3 Flash) or 4,096 (2.5 Pro, 3 Pro)
(https://ai.google.dev/gemini-api/docs/caching). An unknown model: 0.10.
"""

from __future__ import annotations

from collections.abc import Mapping

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.gemini import GEMINI
from mcp_offload.providers.base import ApiCall, IncomingRequest, UpstreamSetting
from mcp_offload.providers.gemini.routes import (
    GEMINI_DEFAULT,
    credential_headers,
    generate_call,
    generate_path,
    is_gemini,
)
from mcp_offload.providers.prices import CachePrices, by_model_prefix
from mcp_offload.providers.vendor import VendorProvider

DEFAULT_PRICES = CachePrices("gemini", write=1.0, read=0.10)
READ_BY_MODEL = (  # by model name prefix (a path's model, "models/" taken off)
    ("gemini-3", 0.10),
    ("gemini-2.5", 0.10),
    ("gemini-2.0", 0.25),
    ("gemini-1.5", 0.25),
)


class GeminiProvider(VendorProvider):
    name = "gemini"
    title = "Gemini API"
    apis: tuple[LlmApi, ...] = (GEMINI,)
    upstream = UpstreamSetting(
        "--gemini-upstream", "MCP_OFFLOAD_GEMINI_UPSTREAM", GEMINI_DEFAULT, "Gemini API base URL, without its /v1beta"
    )
    credential_headers: tuple[str, ...] = ("x-goog-api-key",)

    def route(self, request: IncomingRequest) -> ApiCall | None:
        call = generate_call(request.method, request.path)
        if call is None:
            return None
        if not call.stream:
            return ApiCall(GEMINI, model=call.model, stream=False)
        return ApiCall(
            GEMINI, model=call.model, stream=True, whole_path=generate_path(request.path), sse_query=("alt", "sse")
        )

    def relay_claim(self, request: IncomingRequest) -> int:
        return 2 if is_gemini(request.path, request.headers, request.query) else 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        return credential_headers(request.headers, request.query)

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        name = model.removeprefix("models/")
        return by_model_prefix(name, READ_BY_MODEL, provider="gemini", default=DEFAULT_PRICES)
