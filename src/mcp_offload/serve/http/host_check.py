"""DNS-rebinding protection for every route, as a pure ASGI middleware: the Host and Origin checks the SDK's
transports make on /mcp and /sse, made on the status page, /stats and the login route too (a web page a user
visits could otherwise point its own name at 127.0.0.1 and read a tokenless server's state). `/healthz` stays
open: it says nothing but "ok" and the version, and load balancers probe it by IP.

A foreign Host gets 421 and a foreign Origin 403, before authentication or any route runs. A same-origin request
(Origin = this Host, as a form posting to its own page sends) passes the Origin check.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send


class HostOriginCheck:
    def __init__(
        self, app: ASGIApp, security: TransportSecuritySettings, *, open_paths: Iterable[str] = ("/healthz",)
    ) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(security)
        self._enabled = security.enable_dns_rebinding_protection
        self._open_paths = frozenset(open_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._enabled and scope["type"] == "http" and scope.get("path") not in self._open_paths:
            refused = await self._check.validate_request(Request(_without_same_origin(scope)), is_post=False)
            if refused is not None:
                await refused(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _without_same_origin(scope: Scope) -> Scope:
    """A same-origin request (the login form posting back to its own page: Origin is this very Host) is checked on
    its Host alone, whatever name the server is reached by (its Host must still be an allowed one)."""
    headers = scope.get("headers", ())
    host = origin = None
    for key, value in headers:
        if key == b"host":
            host = value
        elif key == b"origin":
            origin = value
    if host is None or origin not in (b"http://" + host, b"https://" + host):
        return scope
    return {**scope, "headers": [(k, v) for k, v in headers if k != b"origin"]}
