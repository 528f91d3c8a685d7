"""`Refusal`: what a check of `web/` answers instead of letting a request through, and `Refuse`: how a front end
writes one in its clients' own error format (JSON-RPC for MCP clients, the calling LLM API's error document at the
gateway). The codes are stable; the message says what to do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Scope

HOST_NOT_ALLOWED = "host_not_allowed"
ORIGIN_NOT_ALLOWED = "origin_not_allowed"
TOKEN_MISSING = "token_missing"
TOKEN_INVALID = "token_invalid"
TOO_LARGE = "request_too_large"
SHUTTING_DOWN = "shutting_down"


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str


Refuse = Callable[[Scope, Refusal], ASGIApp]  # the front end's answer (an ASGI response) to `refusal` on a request
