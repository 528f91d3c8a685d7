"""The MCP service's token rules over the shared gate (`web/token_check.py`): `Authorization: Bearer <token>`,
the status-page cookie for a browser (`browser_login.py`), and the identity the MCP SDK's transports bind sessions to.

A request with the right token gets its principal attached to the ASGI scope, where the scope policy reads it
(`request_principal`) and where the SDK's transports see an `AuthenticatedUser`, so a streamable-HTTP or SSE session
can only be used with the credential that opened it. Anything else gets 401 (a JSON-RPC error, `refusals.py`; a
browser on `/` gets the login page) before the request body is read or any MCP code runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.types import ASGIApp, Scope

from mcp_offload.serve.http.browser_login import BROWSER_PATHS, BrowserSessions
from mcp_offload.serve.http.refusals import mcp_refusal
from mcp_offload.web.token_check import TokenGate, TokenPlaces, header_tokens, principal_of

BEARER = TokenPlaces(
    read=header_tokens((b"authorization", True)),
    missing="Unauthorized: this server needs 'Authorization: Bearer <token>'.",
    invalid="Unauthorized: the bearer token is not valid for this server.",
)


def request_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The scope policy's view of who is asking: the principal the token gate put on the HTTP request."""
    request = ctx.request
    return principal_of(request.scope) if isinstance(request, Request) else None


def _as_mcp_user(scope: Scope, principal: str) -> None:
    """The SDK transports bind each session to the credential that opened it (`AuthenticatedUser`)."""
    scope["user"] = AuthenticatedUser(AccessToken(token=principal, client_id=principal, scopes=[]))
    scope["auth"] = AuthCredentials([])


class BearerAuthMiddleware(TokenGate):
    """Require one of `tokens` as `Authorization: Bearer` on every request except `open_paths` (e.g. /healthz).
    With `browser`, a status-page cookie also admits `GET /` and `GET /stats`, and a browser on `/` gets the login
    page."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Sequence[str],
        *,
        open_paths: Iterable[str] = ("/healthz",),
        browser: BrowserSessions | None = None,
    ) -> None:
        def cookie(scope: Scope) -> str | None:
            reads_status = scope["type"] == "http" and scope.get("method") == "GET" and scope["path"] in BROWSER_PATHS
            return browser.from_headers(scope.get("headers", ())) if browser is not None and reads_status else None

        super().__init__(
            app,
            tokens,
            BEARER,
            mcp_refusal(login_page=browser is not None),
            open_paths=open_paths,
            fallback=cookie,
            admit=_as_mcp_user,
        )
        self.authenticate = self.check.authenticate
