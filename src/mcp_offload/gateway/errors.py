"""Errors the gateway itself answers with, each in the error document of the API the client speaks (each API's
`error_document`, `apis/<name>/`), so the client's SDK raises its ordinary error type with our message (never a
traceback, never an HTML page). A relayed path gets the document of its provider's first API; the compression
service's paths get its own `{"error": {"code", "message"}}` (compress_api.py).

`GatewayError` is raised below the app (upstream unreachable, body problems) and turned into one of these once;
the refusals of the shared checks (`web/`) are written the same way (access.py).
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.apis.registry import api_for_provider, api_for_request, provider_for_request


class GatewayError(Exception):
    """A request the gateway answers itself: HTTP status, a stable code, and a message that says what to do."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(api: LlmApi, error: GatewayError) -> bytes:
    """`error` in `api`'s error document."""
    return orjson.dumps(api.error_document(error.status, error.code, error.message))


def api_answering(method: str, path: str, headers: Mapping[str, str], query: str) -> LlmApi:
    """The API whose error document a failure of this request gets: the API it calls, or for a relayed path the
    first API of the provider it goes to."""
    served = api_for_request(method, path)
    return served[0] if served is not None else api_for_provider(provider_for_request(path, headers, query))


def compress_error_body(error: GatewayError) -> bytes:
    """The compression service's error document."""
    return orjson.dumps({"error": {"code": error.code, "message": error.message}})
