"""Azure OpenAI as one `Provider`: Chat Completions and Responses under an Azure OpenAI resource's paths.

    POST /openai/deployments/{deployment}/chat/completions?api-version=…   Chat Completions
    POST /openai/responses?api-version=…                                   Responses (the deployment in `model`)
    POST /openai/v1/chat/completions, /openai/v1/responses                  the v1 API (no api-version)
    anything else under /openai/…                                           relayed untouched

`openai.AzureOpenAI(azure_endpoint=<gateway>)` builds the first two, `openai.OpenAI(base_url=<gateway>/openai/v1/)`
the last. The query (`api-version`) goes upstream as the client sent it: Azure checks it.

**The upstream**: the resource's endpoint, `--azure-upstream https://<resource>.openai.azure.com` /
`MCP_OFFLOAD_AZURE_UPSTREAM`; it has no default (the resource is the customer's), and a call without it gets Azure's
own error document naming the setting.

**Credentials**: `api-key` or `Authorization: Bearer` (an Entra ID token) go upstream untouched and are never stored.
The key scopes a conversation's session; an Entra token changes hourly, so a session without a key is scoped by the
conversation's opening (and `x-mcp-offload-session`).

**Prices**: Azure OpenAI's prompt caching is OpenAI's (automatic, from 1,024 tokens, in 128-token steps, no write
charge; "cached tokens are billed at a discount on input token pricing for Standard deployment types", the Azure
OpenAI prompt caching guide https://learn.microsoft.com/azure/ai-foundry/openai/how-to/prompt-caching, checked
2026-11), and Azure lists the same cached-input prices as OpenAI per model: gpt-4o 0.50, gpt-4.1 0.25, the gpt-5
family 0.10. A deployment is named by its owner: the price is the one of the model its name starts with, else the
body's `model`, else 0.10 (where rewriting a cached prefix pays least).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.openai_chat import OPENAI_CHAT
from mcp_offload.apis.responses import RESPONSES
from mcp_offload.providers.base import (
    ApiCall,
    ErrorAnswer,
    IncomingRequest,
    OutgoingRequest,
    UpstreamSetting,
    joined_url,
)
from mcp_offload.providers.prices import CachePrices, by_model_prefix

DEFAULT_PRICES = CachePrices("azure openai", write=1.0, read=0.10)
READ_BY_MODEL = (("gpt-4o", 0.50), ("gpt-4.1", 0.25), ("gpt-5", 0.10), ("o4-mini", 0.25), ("o3", 0.25), ("o1", 0.50))
_DEPLOYMENT_CHAT = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
_PATHS = {
    "/openai/responses": RESPONSES,
    "/openai/v1/chat/completions": OPENAI_CHAT,
    "/openai/v1/responses": RESPONSES,
}
_CODES = {400: "BadRequest", 401: "401", 403: "403", 404: "404", 429: "429", 500: "InternalServerError",
          502: "BadGateway", 503: "ServiceUnavailable", 504: "GatewayTimeout"}  # fmt: skip


class AzureProvider:
    name = "azure"
    title = "Azure OpenAI"
    apis: tuple[LlmApi, ...] = (OPENAI_CHAT, RESPONSES)
    upstream = UpstreamSetting(
        "--azure-upstream",
        "MCP_OFFLOAD_AZURE_UPSTREAM",
        None,
        "Azure OpenAI resource endpoint, https://<resource>.openai.azure.com",
    )
    credential_headers: tuple[str, ...] = ("api-key",)

    def route(self, request: IncomingRequest) -> ApiCall | None:
        if request.method != "POST":
            return None
        found = _DEPLOYMENT_CHAT.match(request.path)
        if found is not None:
            return ApiCall(OPENAI_CHAT, model=found.group("deployment"))
        api = _PATHS.get(request.path)
        return None if api is None else ApiCall(api)

    def relay_claim(self, request: IncomingRequest) -> int:
        return 2 if request.path.startswith("/openai/") else 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        key = request.headers.get("api-key")
        return {"api-key": key} if key else {}

    def upstream_url(self, base: str, path: str, query: str) -> str:
        return joined_url(base, path, query)

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        return outgoing

    def overloaded_status(self, api: LlmApi) -> int:
        # 503 ServiceUnavailable, as OpenAI's own (429 is the deployment's quota: "exceeded token rate limit")
        return 503

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        document = {"error": {"code": _CODES.get(status, str(status)), "message": message}}
        return ErrorAnswer(status, orjson.dumps(document))

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return by_model_prefix(model, READ_BY_MODEL, provider="azure openai", default=DEFAULT_PRICES)
