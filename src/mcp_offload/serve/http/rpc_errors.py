"""JSON-RPC error bodies on plain HTTP responses, so MCP clients surface the message as is (413, 401, 503, 404).

Also the JSON-RPC code this package uses when the server is draining (`SHUTTING_DOWN`).
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse

SHUTTING_DOWN = -32000  # JSON-RPC server error: the server is draining


def rpc_error(status: int, code: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """An HTTP error whose body is a JSON-RPC error, so MCP clients surface `message` as is."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status, headers=headers)
