"""What the vendors' own endpoints share (Anthropic, OpenAI, the Gemini API): the request goes upstream as the client
sent it (no path rewrite, no signing), the credential headers scope the session as they are, and a failure the
gateway answers itself is in the API's own error document (a relayed request: the provider's first API's)."""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.base import ErrorAnswer, IncomingRequest, OutgoingRequest, joined_url


class VendorProvider:
    apis: tuple[LlmApi, ...]

    def relay_claim(self, request: IncomingRequest) -> int:
        return 0

    def session_headers(self, request: IncomingRequest) -> Mapping[str, str]:
        return request.headers

    def upstream_url(self, base: str, path: str, query: str) -> str:
        return joined_url(base, path, query)

    async def prepare(self, outgoing: OutgoingRequest) -> OutgoingRequest:
        return outgoing

    def overloaded_status(self, api: LlmApi) -> int:
        return api.overloaded_status  # the vendor's own API: its own answer

    def error_answer(self, api: LlmApi | None, status: int, code: str, message: str) -> ErrorAnswer:
        document = (api or self.apis[0]).error_document(status, code, message)
        return ErrorAnswer(status, orjson.dumps(document))
