"""Anthropic's error document: `{"type": "error", "error": {"type": "invalid_request_error", "message": ...}}`; in a
stream, `event: error` with the same body."""

from __future__ import annotations

from typing import Any

from mcp_offload.apis.sse import encode_event

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    415: "invalid_request_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


def error_document(status: int, code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": _TYPES.get(status, "api_error"), "message": message}}


def stream_error_event(code: str, message: str, sequence_number: int = 0) -> bytes:
    return encode_event(error_document(500, code, message), "error")
