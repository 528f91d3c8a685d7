"""The front end's own token, as a pure ASGI middleware (`TokenGate`), and the constant-time check under it
(`TokenCheck`).

Each configured token is one principal, named by its fingerprint (`principal_id`, SHA-256: the same token maps to
the same store scope across restarts, and logs and the store only ever see the fingerprint). A request that presents
a configured token, in one of the places its front end reads (`TokenPlaces`), gets its principal attached to the
ASGI scope (`principal_of`); anything else gets 401 before its body is read or any route runs. Tokens are compared
in constant time (over SHA-256 digests, every configured token each time) and never logged.

Where a token is presented is the front end's: MCP clients send `Authorization: Bearer <token>`; at the gateway
`Authorization` and `x-api-key` are the provider's, so its clients send `x-mcp-offload-token: <token>` or
`Proxy-Authorization: Bearer <token>`.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.web.open_paths import OpenPaths
from mcp_offload.web.refusal import TOKEN_INVALID, TOKEN_MISSING, Refusal, Refuse

PRINCIPAL_KEY = "mcp_offload.principal"  # in scope["state"]: the authenticated principal id
MIN_TOKEN_CHARS = 16


def principal_id(token: str) -> str:
    """A stable, non-reversible name for a token: the same token maps to the same store scope across restarts."""
    return "tok-" + hashlib.sha256(token.encode("utf-8")).hexdigest()


def principal_label(principal: str | None) -> str:
    """What logs show for a principal: a short prefix of its fingerprint."""
    return principal[:12] if principal else "-"


def principal_of(scope: Scope) -> str | None:
    """The principal the token gate attached to this request, or None (no token configured)."""
    state = scope.get("state")
    return state.get(PRINCIPAL_KEY) if isinstance(state, dict) else None


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


@dataclass(frozen=True, slots=True)
class _Credential:
    digest: bytes
    principal: str


class TokenCheck:
    """The configured tokens, compared in constant time: a presented token (or an Authorization-style header
    value) → its principal."""

    def __init__(self, tokens: Sequence[str]) -> None:
        self._credentials = tuple(
            _Credential(hashlib.sha256(t.encode("utf-8")).digest(), principal_id(t)) for t in tokens
        )

    def principal(self, presented: bytes) -> str | None:
        """The principal of a presented token, or None. Constant time in the token's content."""
        digest = hashlib.sha256(presented).digest()
        found: str | None = None
        for credential in self._credentials:  # no early exit: every token is compared every time
            if hmac.compare_digest(digest, credential.digest):
                found = credential.principal
        return found

    def authenticate(self, authorization: bytes | None) -> str | None:
        """The principal for an `Authorization: Bearer <token>` header value, or None."""
        presented = bearer_value(authorization)
        return self.principal(presented) if presented else None

    def authenticate_token(self, token: str) -> str | None:
        """The principal for a bare token (the browser login form), or None."""
        return self.principal(token.encode("utf-8")) if token else None


def bearer_value(value: bytes | None) -> bytes | None:
    """The token of a `Bearer <token>` header value (any case of the scheme), else None."""
    if not value:
        return None
    scheme, _, presented = value.partition(b" ")
    return presented.strip() if scheme.lower() == b"bearer" and presented.strip() else None


@dataclass(frozen=True, slots=True)
class TokenPlaces:
    """Where a front end's clients present its token, and what a refusal tells them.

    `read(scope)`: the tokens the request presents (one per place it uses); `missing` / `invalid`: the refusal's
    message when it presents none / none that is configured."""

    read: Callable[[Scope], list[bytes]]
    missing: str
    invalid: str


def header_tokens(*places: tuple[bytes, bool]) -> Callable[[Scope], list[bytes]]:
    """A `TokenPlaces.read` over headers: each `(name, bearer)` place is the header's whole value, or with `bearer`
    the token of its `Bearer <token>` value. A header that is there but holds no token (`Basic …`, `Bearer`) counts
    as presented (an empty token, which no configured one matches): its refusal says the token is not valid."""
    wanted = dict(places)

    def read(scope: Scope) -> list[bytes]:
        found: list[bytes] = []
        for key, value in scope.get("headers", ()):
            bearer = wanted.get(key)
            if bearer is not None:
                found.append((bearer_value(value) if bearer else value.strip()) or b"")
        return found

    return read


class TokenGate:
    """Require one of `tokens` on every request but `open_paths`.

    `fallback(scope)`: another way a request may name its principal (the MCP service's status-page cookie), asked
    when no token matched; `admit(scope, principal)`: what the front end attaches besides the principal."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Sequence[str],
        places: TokenPlaces,
        refuse: Refuse,
        *,
        open_paths: Iterable[str] = (),
        fallback: Callable[[Scope], str | None] | None = None,
        admit: Callable[[Scope, str], None] | None = None,
    ) -> None:
        if not tokens:
            raise ValueError("TokenGate needs at least one token")
        self.app = app
        self.check = TokenCheck(tokens)
        self.places = places
        self.refuse = refuse
        self._open = OpenPaths(open_paths)
        self._fallback = fallback
        self._admit = admit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self._open.includes(scope):
            await self.app(scope, receive, send)
            return
        presented = self.places.read(scope)
        principal = None
        for token in presented:  # each place the request used is checked in full (constant time per place)
            principal = (self.check.principal(token) if token else None) or principal
        if principal is None and self._fallback is not None:
            principal = self._fallback(scope)
        if principal is None:
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            refusal = (
                Refusal(401, TOKEN_INVALID, self.places.invalid)
                if presented
                else Refusal(401, TOKEN_MISSING, self.places.missing)
            )
            await self.refuse(scope, refusal)(scope, receive, send)
            return
        scope.setdefault("state", {})[PRINCIPAL_KEY] = principal
        if self._admit is not None:
            self._admit(scope, principal)
        await self.app(scope, receive, send)
