"""The OpenAI error document, shared by the OpenAI APIs (Chat Completions, Responses) and by anything relayed to
OpenAI: `{"error": {"message", "type", "param", "code"}}`, which the OpenAI SDKs raise as their own error types."""

from __future__ import annotations

from typing import Any

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "invalid_request_error",
    415: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error_type(status: int) -> str:
    return _TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")


def openai_error_document(status: int, code: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": openai_error_type(status), "param": None, "code": code}}
