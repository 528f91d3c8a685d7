"""Google Vertex AI as one `Provider`: Gemini and Claude under a project's resource paths.

    POST /{v1|v1beta1}/projects/{p}/locations/{l}/publishers/google/models/{m}:generateContent      Gemini
    POST …/publishers/google/models/{m}:streamGenerateContent?alt=sse                               (streamed)
    POST …/publishers/anthropic/models/{m}:rawPredict                                                Claude (Messages)
    POST …/publishers/anthropic/models/{m}:streamRawPredict                                          (streamed, SSE)
    anything else under /{version}/projects/… (countTokens, count-tokens:rawPredict, …)             relayed untouched

`google-genai` with `vertexai=True` and a base URL calls `/v1beta1/…` (its default version on Vertex);
`AnthropicVertex` and Claude Code (`ANTHROPIC_VERTEX_BASE_URL`, which ends in `/v1`) call `/v1/…`. The Claude body
is the Messages body with `anthropic_version` and without `model` (the path names it): the Anthropic API package
reads it as it is; the Gemini body is the Gemini API's.

**The upstream**: by default the location's own endpoint, as the SDKs build it: `https://{l}-aiplatform.googleapis.com`
(`global`: `https://aiplatform.googleapis.com`; the multi-regions `us` and `eu`:
`https://aiplatform.{l}.rep.googleapis.com`). `--vertex-upstream URL` / `MCP_OFFLOAD_VERTEX_UPSTREAM` sends every call
to one base instead (a Private Service Connect endpoint, a corporate proxy); `{location}` in it is replaced.

**Credentials**: the OAuth access token in `Authorization: Bearer` goes upstream untouched and is never stored; it
changes hourly, so a conversation's session is scoped by its project (from the path), not by the token. Retrieval
answers only ever go back inside an answer Vertex gave that token for that project.

**Prices** (checked 2026-11): Claude on Vertex, "Prompt caching" for Anthropic models
(https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/prompt-caching): a cache write costs 25 %
more than base input, a cache read 90 % less (1.25x / 0.1x), 5-minute TTL. Gemini on Vertex, the context cache
overview (https://cloud.google.com/vertex-ai/generative-ai/docs/context-cache/context-cache-overview): implicit
caching, no write charge, "a 90% discount on cached tokens" (0.1x), for requests of at least 2,048 tokens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import orjson

from mcp_offload.apis.anthropic import ANTHROPIC_MESSAGES
from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.gemini import GEMINI
from mcp_offload.providers.base import (
    ApiCall,
    ErrorAnswer,
    IncomingRequest,
    OutgoingRequest,
    UpstreamSetting,
    joined_url,
)
from mcp_offload.providers.prices import CachePrices

CLAUDE_PRICES = CachePrices("vertex claude 5-minute cache", write=1.25, read=0.10)
GEMINI_PRICES = CachePrices("vertex gemini implicit cache", write=1.0, read=0.10)
LOCATION_DEFAULT = "https://{location}-aiplatform.googleapis.com"
_RESOURCE = re.compile(
    r"^/(?P<version>v1|v1beta1)/projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/publishers/"
    r"(?P<publisher>google|anthropic)/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$"
)
_CALLS = {
    ("google", "generateContent"): (GEMINI, False),
    ("google", "streamGenerateContent"): (GEMINI, True),
    ("anthropic", "rawPredict"): (ANTHROPIC_MESSAGES, False),
    ("anthropic", "streamRawPredict"): (ANTHROPIC_MESSAGES, True),
}
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "UNAVAILABLE",
           503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED", 529: "UNAVAILABLE"}  # fmt: skip


def location_base(location: str) -> str:
    """The endpoint the SDKs use for a location."""
    if location == "global":
        return "https://aiplatform.googleapis.com"
    if location in ("us", "eu"):
        return f"https://aiplatform.{location}.rep.googleapis.com"
    return LOCATION_DEFAULT.format(location=location)


class VertexProvider:
    name = "vertex"
    title = "Google Vertex AI"
    apis: tuple[LlmApi, ...] = (GEMINI, ANTHROPIC_MESSAGES)
    upstream = UpstreamSetting(
        "--vertex-upstream",
        "MCP_OFFLOAD_VERTEX_UPSTREAM",
        LOCATION_DEFAULT,
        "Vertex AI base URL, {location} replaced by each call's location",
    )
    credential_headers: tuple[str, ...] = ("authorization",)

    def route(self, request: IncomingRequest) -> ApiCall | None:
        found = _RESOURCE.match(request.path) if request.method == "POST" else None
        call = _CALLS.get((found.group("publisher"), found.group("method"))) if found else None
        if found is None or call is None:
            return None
        api, stream = call
        model = found.group("model")
        if api is GEMINI and stream:  # without alt=sse the stream is one JSON array: answered whole when it loops
            whole = request.path.removesuffix(":streamGenerateContent") + ":generateContent"
            return ApiCall(api, model=model, stream=True, whole_path=whole, sse_query=("alt", "sse"))
        return ApiCall(api, model=model, stream=stream)

    def relay_claim(self, request: IncomingRequest) -> int:
        return 3 if re.match(r"^/(v1|v1beta1)/projects/[^/]+/locations/", request.path) else 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        found = _RESOURCE.match(request.path)
        return {"authorization": f"vertex project {found.group('project')}"} if found else {}

    def upstream_url(self, base: str, path: str, query: str) -> str:
        if "{location}" in base:
            found = re.match(r"^/[^/]+/projects/[^/]+/locations/([^/]+)/", path)
            base = location_base(found.group(1)) if found else base.replace("{location}-", "")
        return joined_url(base, path, query)

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        return outgoing

    def overloaded_status(self, api: LlmApi) -> int:
        # Claude on Vertex answers 529 overloaded (the AnthropicVertex client raises OverloadedError); Gemini 503
        # UNAVAILABLE, as the Gemini API does
        return api.overloaded_status

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        document = {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}
        return ErrorAnswer(status, orjson.dumps(document))

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return CLAUDE_PRICES if api is ANTHROPIC_MESSAGES else GEMINI_PRICES
