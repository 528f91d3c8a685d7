"""Errors the gateway itself answers with, each in the error document of the API the client speaks (each API's
`error_document`, `apis/<name>/`), so the client's SDK raises its ordinary error type with our message (never a
traceback, never an HTML page). A relayed path gets the document of its provider's first API.

`GatewayError` is raised below the app (upstream unreachable, body problems) and turned into one of these once.
"""

from __future__ import annotations

import orjson

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named


class GatewayError(Exception):
    """A request the gateway answers itself: HTTP status, a stable code, and a message that says what to do."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_body(api: ApiName, error: GatewayError) -> bytes:
    return orjson.dumps(api_named(api).error_document(error.status, error.code, error.message))
