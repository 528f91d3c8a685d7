"""Toy Cloud as one `Provider`: its route carries the model in the path and goes upstream under another path, its
requests are signed after any rewrite (`prepare`), its streams come in frames of its own (`framing.py`), and it has
no default upstream (a call without one is refused in
its own error document, naming the setting)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.base import (
    ApiCall,
    ErrorAnswer,
    IncomingRequest,
    OutgoingRequest,
    Provider,
    UpstreamSetting,
)
from mcp_offload.providers.prices import CachePrices
from toy_llm.api import TOY
from toy_llm.framing import TOY_FRAMES

ROUTE = re.compile(r"^/toy/v1/models/([A-Za-z0-9._-]+):complete$")
PRICES = CachePrices("toy cloud", write=1.0, read=0.20)  # the toy's own price list: cached input at a fifth


def signature(body: bytes | None) -> str:
    return hashlib.sha256(b"toy-secret:" + (body or b"")).hexdigest()


class ToyProvider:
    name = "toy"
    title = "Toy Cloud"
    apis: tuple[LlmApi, ...] = (TOY,)
    upstream = UpstreamSetting("--toy-upstream", "MCP_OFFLOAD_TOY_UPSTREAM", None, "Toy Cloud base URL")
    credential_headers: tuple[str, ...] = ("x-toy-key",)

    def route(self, request: IncomingRequest) -> ApiCall | None:
        found = ROUTE.match(request.path) if request.method == "POST" else None
        if found is None:
            return None
        model = found.group(1)
        return ApiCall(TOY, model=model, upstream_path=f"/v1/complete/{model}", framing=TOY_FRAMES)

    def relay_claim(self, request: IncomingRequest) -> int:
        return 2 if request.path.startswith("/toy/") else 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        return request.headers

    def upstream_url(self, base: str, path: str, query: str) -> str:
        url = base.rstrip("/") + path.removeprefix("/toy")
        return f"{url}?{query}" if query else url

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        headers = [(n, v) for n, v in outgoing.headers if n != "x-toy-signature"]
        headers.append(("x-toy-signature", signature(outgoing.content)))
        return OutgoingRequest(outgoing.method, outgoing.url, headers, outgoing.content)

    def overloaded_status(self, api: LlmApi) -> int:
        return 503

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        body = orjson.dumps(TOY.error_document(status, code, message))
        return ErrorAnswer(status, body, (("content-type", "application/json"), ("x-toy-error", code)))

    def cache_prices(self, api: LlmApi, model: str) -> CachePrices:
        return PRICES


TOY_CLOUD: Provider = ToyProvider()
