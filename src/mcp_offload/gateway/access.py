"""Who may use the gateway, checked before a request's body is read: its own token and the Host/Origin check.

- Token (optional): `x-mcp-offload-token: T` or `Proxy-Authorization: Bearer T`. `Authorization` and `x-api-key` are
  the provider's credentials and pass through untouched. Tokens are compared in constant time over SHA-256 digests,
  every configured token each time, and never logged.
- Host / Origin (DNS-rebinding protection, as the HTTP service does): the Host header must match an allowed pattern
  (`name` or `name:*`); a request with an Origin header must match an allowed origin. Empty lists turn a check off.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from mcp_offload.gateway.errors import GatewayError


class GatewayAccess:
    def __init__(self, tokens: Sequence[str], allowed_hosts: Sequence[str], allowed_origins: Sequence[str]) -> None:
        self._tokens = tuple(hashlib.sha256(t.encode()).digest() for t in tokens)
        self._hosts = tuple(allowed_hosts)
        self._origins = tuple(allowed_origins)

    def refusal(self, headers: dict[str, str]) -> GatewayError | None:
        """Why this request may not go on (None: it may). `headers`: lower-case names."""
        if self._tokens and not self._authorized(headers):
            return GatewayError(
                401,
                "gateway_unauthorized",
                "This mcp-offload gateway needs its token: send 'x-mcp-offload-token: <token>' (or "
                "'Proxy-Authorization: Bearer <token>'); Authorization and x-api-key go to the provider.",
            )
        if self._hosts and not _matches(headers.get("host"), self._hosts):
            return GatewayError(421, "host_not_allowed", "Host header not allowed (DNS rebinding protection).")
        origin = headers.get("origin")
        if origin and "*" not in self._origins and not _matches(origin, self._origins):
            return GatewayError(403, "origin_not_allowed", "Origin not allowed (DNS rebinding protection).")
        return None

    def _authorized(self, headers: dict[str, str]) -> bool:
        presented = headers.get("x-mcp-offload-token")
        if presented is None:
            scheme, _, value = headers.get("proxy-authorization", "").partition(" ")
            presented = value.strip() if scheme.lower() == "bearer" else None
        if not presented:
            return False
        digest = hashlib.sha256(presented.encode()).digest()
        found = False
        for token in self._tokens:  # every token compared every time: constant time in the content
            found |= hmac.compare_digest(digest, token)
        return found


def _matches(value: str | None, patterns: tuple[str, ...]) -> bool:
    if not value:
        return False
    return any(value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1])) for pattern in patterns)
