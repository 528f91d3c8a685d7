"""Errors the gateway itself answers with, each in the format of the API the client speaks, so the client's SDK
raises its ordinary error type with our message (never a traceback, never an HTML page).

- Anthropic: `{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}`; in a stream,
  `event: error` with the same body.
- OpenAI (Chat Completions, Responses, anything else): `{"error": {"message", "type", "param", "code"}}`; in a Chat
  Completions stream a `data:` line with that body (what the SDK checks for); in a Responses stream an `error` event
  (`{"type": "error", "code", "message", "param", "sequence_number"}`).
- Gemini: `{"error": {"code", "message", "status"}}` (apis.gemini.errors); in a stream a `data:` event with it.

`GatewayError` is raised below the app (upstream unreachable, body problems) and turned into one of these once.
"""

from __future__ import annotations

from typing import Any, Literal

import orjson

from mcp_offload.apis.gemini.errors import error_document as gemini_error_document
from mcp_offload.apis.gemini.errors import stream_error_event as gemini_stream_error
from mcp_offload.gateway.stream.sse import encode_event

ApiFamily = Literal["anthropic", "openai", "gemini"]

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


class GatewayError(Exception):
    """A request the gateway answers itself: HTTP status, a stable code, and a message that says what to do."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def family_of(api: str) -> ApiFamily:
    if api in ("anthropic", "gemini"):
        return "anthropic" if api == "anthropic" else "gemini"
    return "openai"


def error_type(family: ApiFamily, status: int) -> str:
    if family == "anthropic":
        return _ANTHROPIC_TYPES.get(status, "api_error")
    return _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def error_document(family: ApiFamily, status: int, code: str, message: str) -> dict[str, Any]:
    if family == "gemini":
        return gemini_error_document(status, message)
    if family == "anthropic":
        return {"type": "error", "error": {"type": error_type(family, status), "message": message}}
    return {"error": {"message": message, "type": error_type(family, status), "param": None, "code": code}}


def error_body(family: ApiFamily, error: GatewayError) -> bytes:
    return orjson.dumps(error_document(family, error.status, error.code, error.message))


def stream_error_event(api: str, code: str, message: str, sequence_number: int = 0) -> bytes:
    """The event that ends a stream the gateway cannot finish (upstream dropped, follow-up call failed)."""
    if api == "anthropic":
        return encode_event(error_document("anthropic", 500, code, message), "error")
    if api == "gemini":
        return gemini_stream_error(message)
    if api == "responses":
        data = {"type": "error", "code": code, "message": message, "param": None, "sequence_number": sequence_number}
        return encode_event(data, "error")
    return encode_event(error_document("openai", 500, code, message))
