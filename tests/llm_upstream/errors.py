"""Errors the scripted upstream answers with, in each API's own wire format.

`InvalidRequest` is raised by the validators (400); `ApiError` carries any status a script asks for (429, 500, 529…).
The bodies follow the providers' documented shapes:

* Anthropic: ``{"type": "error", "error": {"type": "invalid_request_error", "message": …}, "request_id": …}``
* OpenAI (Chat and Responses): ``{"error": {"message": …, "type": …, "param": …, "code": …}}``
* Gemini: ``{"error": {"code": 400, "message": …, "status": "INVALID_ARGUMENT"}}``
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any, Literal

ApiKind = Literal["anthropic", "openai_chat", "responses", "gemini", "converse"]

_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                  500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}  # fmt: skip
_OPENAI_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


class InvalidRequest(Exception):
    """A request the real API would refuse with 400; `param` names the offending field (OpenAI style)."""

    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status


@dataclass(frozen=True, slots=True)
class ApiError:
    """A scripted failure: the status, the message, and for 429 the retry-after seconds."""

    status: int
    message: str = "scripted failure"
    retry_after_s: float | None = None
    error_type: str | None = None  # overrides the per-status default type


def request_id() -> str:
    return "req_" + secrets.token_hex(12)


def error_body(
    api: ApiKind, status: int, message: str, *, param: str | None = None, error_type: str | None = None
) -> dict[str, Any]:
    if api == "gemini":
        return {
            "error": {
                "code": status,
                "message": message,
                "status": error_type or _GEMINI_STATUS.get(status, "INTERNAL"),
            }
        }
    if api == "anthropic":
        kind = error_type or _ANTHROPIC_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}, "request_id": request_id()}
    kind = error_type or _OPENAI_TYPES.get(status, "server_error" if status >= 500 else "invalid_request_error")
    code = "rate_limit_exceeded" if status == 429 else ("invalid_value" if status == 400 and param else None)
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
