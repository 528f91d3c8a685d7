"""Bearer-token authentication for the HTTP transports, as a pure ASGI middleware.

Each configured token is one principal. A request with the right `Authorization: Bearer <token>` gets its
principal attached to the ASGI scope, where the scope policy reads it (`principal_of`) and where the SDK's
transports see an `AuthenticatedUser`, so a streamable-HTTP or SSE session can only be used with the credential
that opened it. Anything else gets 401 before the request body is read or any MCP code runs. `request_principal`
is the same lookup from an MCP request context (the scope policy and the request log use it).

Tokens are compared in constant time (over SHA-256 digests, every configured token each time) and never logged:
logs and the store only ever see the principal id, a SHA-256 fingerprint of the token.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server import ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.serve.http.browser_login import BROWSER_PATHS, BrowserSessions, login_page
from mcp_offload.serve.http.rpc_errors import rpc_error

PRINCIPAL_KEY = "mcp_offload.principal"  # in scope["state"]: the authenticated principal id
MIN_TOKEN_CHARS = 16
UNAUTHORIZED = -32001  # JSON-RPC server-defined error code used in 401 bodies


def principal_id(token: str) -> str:
    """A stable, non-reversible name for a token: the same token maps to the same store scope across restarts."""
    return "tok-" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def principal_label(principal: str | None) -> str:
    """What logs show for a principal: a short prefix of its fingerprint."""
    return principal[:12] if principal else "-"


def parse_tokens(values: Iterable[str]) -> tuple[str, ...]:
    """Tokens from repeated flags and/or comma-separated env values; refuses short ones (they are guessable)."""
    tokens: list[str] = []
    for value in values:
        for part in value.split(","):
            token = part.strip()
            if not token:
                continue
            if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
                raise ValueError(
                    f"a token must be at least {MIN_TOKEN_CHARS} characters without spaces; generate one with "
                    "python -c 'import secrets; print(secrets.token_urlsafe(32))'"
                )
            if token not in tokens:
                tokens.append(token)
    return tuple(tokens)


def principal_of(scope: Scope) -> str | None:
    """The principal the auth middleware attached to this request, or None (no auth configured)."""
    state = scope.get("state")
    return state.get(PRINCIPAL_KEY) if isinstance(state, dict) else None


def request_principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The scope policy's view of who is asking: the principal the auth middleware put on the HTTP request."""
    request = ctx.request
    return principal_of(request.scope) if isinstance(request, Request) else None


@dataclass(frozen=True, slots=True)
class _Credential:
    digest: bytes
    principal: str


class TokenCheck:
    """The configured tokens, compared in constant time: an Authorization header value or a bare token → principal."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._credentials = tuple(
            _Credential(hashlib.sha256(t.encode("utf-8")).digest(), principal_id(t)) for t in tokens
        )

    def authenticate(self, authorization: bytes | None) -> str | None:
        """The principal for an Authorization header value, or None. Constant time in the token's content."""
        if not authorization:
            return None
        scheme, _, presented = authorization.partition(b" ")
        if scheme.lower() != b"bearer":
            return None
        digest = hashlib.sha256(presented.strip()).digest()
        found: str | None = None
        for credential in self._credentials:  # no early exit: every token is compared every time
            if hmac.compare_digest(digest, credential.digest):
                found = credential.principal
        return found

    def authenticate_token(self, token: str) -> str | None:
        """The principal for a bare token (the browser login form), or None."""
        return self.authenticate(b"Bearer " + token.encode("utf-8")) if token else None


class BearerAuthMiddleware:
    """Require one of `tokens` on every request except `open_paths` (e.g. /healthz). With `browser`, a status-page
    cookie (browser_login.py) also admits `GET /` and `GET /stats`, and a browser on `/` gets the login page."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Sequence[str],
        *,
        open_paths: Iterable[str] = ("/healthz",),
        browser: BrowserSessions | None = None,
    ) -> None:
        if not tokens:
            raise ValueError("BearerAuthMiddleware needs at least one token")
        self.app = app
        self._browser = browser
        self._check = TokenCheck(tokens)
        self.authenticate = self._check.authenticate
        self._open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in self._open_paths:
            await self.app(scope, receive, send)
            return
        authorization = None
        for key, value in scope.get("headers", ()):
            if key == b"authorization":
                authorization = value
                break
        principal = self.authenticate(authorization)
        reads_status = scope["type"] == "http" and scope.get("method") == "GET" and scope.get("path") in BROWSER_PATHS
        if principal is None and reads_status and self._browser is not None:
            principal = self._browser.from_headers(scope.get("headers", ()))
        if principal is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            if reads_status and scope.get("path") == "/" and self._browser is not None:
                await login_page("Log in to see this server's status.", status=401)(scope, receive, send)
                return
            await _unauthorized(presented=authorization is not None)(scope, receive, send)
            return
        state = scope.setdefault("state", {})
        state[PRINCIPAL_KEY] = principal
        # The SDK transports bind each session to the credential that opened it (AuthenticatedUser).
        scope["user"] = AuthenticatedUser(AccessToken(token=principal, client_id=principal, scopes=[]))
        scope["auth"] = AuthCredentials([])
        await self.app(scope, receive, send)


def _unauthorized(presented: bool) -> JSONResponse:
    """401 with a JSON-RPC error body; the request body is never read."""
    if presented:
        message = "Unauthorized: the bearer token is not valid for this server."
        challenge = 'Bearer realm="mcp-offload", error="invalid_token"'
    else:
        message = "Unauthorized: this server needs 'Authorization: Bearer <token>'."
        challenge = 'Bearer realm="mcp-offload"'
    return rpc_error(401, UNAUTHORIZED, message, headers={"WWW-Authenticate": challenge})
