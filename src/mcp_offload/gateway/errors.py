"""Errors the gateway itself answers with, each in the error document of the provider and API the client speaks
(`Provider.error_answer`; for the vendors' own endpoints the API's `error_document`, `apis/<name>/`), so the
client's SDK raises its ordinary error type with our message (never a traceback, never an HTML page). A relayed path
gets the document of the provider it goes to.

`GatewayError` is raised below the app (upstream unreachable or not configured, body problems) and turned into one
of these once; the refusals of the shared checks (`web/`) are written the same way (access.py).
"""

from __future__ import annotations

import orjson

from mcp_offload.apis.base import LlmApi
from mcp_offload.providers.base import IncomingRequest, Provider
from mcp_offload.providers.registry import call_for_request, relay_provider


class GatewayError(Exception):
    """A request the gateway answers itself: HTTP status, a stable code, and a message that says what to do."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(
    provider: Provider, api: LlmApi | None, error: GatewayError
) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """(status, ASGI headers, body) of `error` as `provider`'s clients of `api` (None: a relayed request) read it."""
    answer = provider.error_answer(api, error.status, error.code, error.message)
    headers = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in answer.headers]
    retry_after = getattr(error, "retry_after_s", None)
    if retry_after is not None:  # a shed turn (admission.py): when to try again, which the SDKs' retries honour
        headers.append((b"retry-after", str(retry_after).encode()))
    return answer.status, headers, answer.body


def missing_upstream(provider: Provider) -> GatewayError:
    """The error for a call to a provider whose upstream base URL nobody set (a cloud has no default)."""
    setting = provider.upstream
    return GatewayError(
        503,
        "upstream_not_configured",
        f"The gateway has no upstream for {provider.title}: start it with {setting.flag} URL (or set {setting.env}).",
    )


def answering(request: IncomingRequest) -> tuple[Provider, LlmApi | None]:
    """Whose error document a failure of `request` gets: the provider and API it calls, or for a relayed request
    the provider it goes to (and no API)."""
    served = call_for_request(request)
    return (served[0], served[1].api) if served is not None else (relay_provider(request), None)


def own_error_body(error: GatewayError) -> bytes:
    """The gateway's own error document, for what no provider answers (the compression service, /stats)."""
    return orjson.dumps({"error": {"code": error.code, "message": error.message}})
