"""Gemini's error document, `{"error": {"code": 400, "message": "…", "status": "INVALID_ARGUMENT"}}` (google.rpc
Status names), as an answer and as the stream event that ends a stream the gateway cannot finish (the SDKs raise
their `APIError` for a `data: {"error": …}` event)."""

from __future__ import annotations

from typing import Any

import orjson

STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    415: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def status_name(status: int) -> str:
    return STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


def error_document(status: int, message: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": status_name(status)}}


def stream_error_event(message: str, status: int = 500) -> bytes:
    return b"data: " + orjson.dumps(error_document(status, message)) + b"\n\n"
