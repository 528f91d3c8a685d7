"""How the MCP service answers a request the shared checks of `web/` refuse, in what its clients read:

- a foreign Host or Origin: the MCP SDK transports' own plain-text answer (421 "Invalid Host header", 403 "Invalid
  Origin header"), so /mcp, /sse and every other route refuse alike;
- no or a wrong token: 401 with a JSON-RPC error (-32001) and a `WWW-Authenticate: Bearer` challenge
  (`error="invalid_token"` when a token was presented); a browser on `GET /` gets the login page instead;
- a body over the cap: 413 with a JSON-RPC error (invalid request), so MCP clients surface the message as is.
"""

from __future__ import annotations

import mcp.types as types
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Scope

from mcp_offload.serve.http.browser_login import login_page
from mcp_offload.serve.http.rpc_errors import SHUTTING_DOWN, rpc_error
from mcp_offload.web.refusal import HOST_NOT_ALLOWED, ORIGIN_NOT_ALLOWED, TOKEN_INVALID, Refusal, Refuse

UNAUTHORIZED = -32001  # JSON-RPC server-defined error code used in 401 bodies
_PLAIN = {HOST_NOT_ALLOWED: "Invalid Host header", ORIGIN_NOT_ALLOWED: "Invalid Origin header"}


def mcp_refusal(*, login_page: bool = False) -> Refuse:
    """The `Refuse` of the MCP service (`login_page`: a browser on `GET /` without a credential gets the form)."""

    def refuse(scope: Scope, refusal: Refusal) -> ASGIApp:
        if refusal.code in _PLAIN:
            return PlainTextResponse(_PLAIN[refusal.code], status_code=refusal.status)
        if refusal.status == 401:
            if login_page and scope.get("method") == "GET" and scope.get("path") == "/":
                return browser_login_page()
            challenge = 'Bearer realm="mcp-offload"'
            if refusal.code == TOKEN_INVALID:
                challenge += ', error="invalid_token"'
            return rpc_error(401, UNAUTHORIZED, refusal.message, headers={"WWW-Authenticate": challenge})
        if refusal.status == 503:
            return rpc_error(503, SHUTTING_DOWN, refusal.message)
        return rpc_error(refusal.status, types.INVALID_REQUEST, refusal.message)

    return refuse


def browser_login_page() -> ASGIApp:
    return login_page("Log in to see this server's status.", status=401)
