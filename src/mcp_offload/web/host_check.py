"""DNS-rebinding protection for every route but the open ones, as a pure ASGI middleware: a web page a user visits
could otherwise point its own name at 127.0.0.1 and read a tokenless server (or spend a gateway's provider key).

The rules (`HostRules`), the same at the MCP HTTP service and the gateway, and the same as the MCP SDK's transports
apply on /mcp and /sse (`serve/http/options.transport_security` hands them the same lists):

- the Host header must be an allowed value: `name` exactly, or `name:*` (that name on any port); a request without
  Host is refused. `exposure_rules` allows the loopback names always, the bound address, and what the operator
  adds (`--allowed-hosts`; `*` turns both checks off, for a reverse proxy that does them);
- a request with an Origin header must come from an allowed origin (same patterns), or from this very server: an
  Origin that is `http(s)://` + the request's Host passes, but only where the Host is checked (a rebound page's
  Origin is its own name, which the Host check refuses). A request without Origin passes (not a browser's
  cross-site request).

A foreign Host gets 421 and a foreign Origin 403, before the token check or any route runs; `refuse` writes the
answer in the front end's format. The decision is `HostRules.refusal`, so it can be tested apart from HTTP.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.web.open_paths import OpenPaths
from mcp_offload.web.refusal import HOST_NOT_ALLOWED, ORIGIN_NOT_ALLOWED, Refusal, Refuse

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
_LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*")
_LOOPBACK_ORIGINS = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _matches(value: str, patterns: Sequence[str]) -> bool:
    """`value` is a pattern exactly, or `name:*` and `value` is that name with a port (the MCP SDK's rule)."""
    return value in patterns or any(p.endswith(":*") and value.startswith(p[:-1]) for p in patterns)


@dataclass(frozen=True, slots=True)
class HostRules:
    """The allowed Host and Origin values; None turns that check off."""

    hosts: tuple[str, ...] | None
    origins: tuple[str, ...] | None

    def refusal(self, host: str | None, origin: str | None) -> Refusal | None:
        """Why a request with these headers may not go on (None: it may)."""
        if self.hosts is not None and not (host and _matches(host, self.hosts)):
            return Refusal(421, HOST_NOT_ALLOWED, "Host header not allowed (DNS rebinding protection).")
        if origin and self.origins is not None and not _matches(origin, self.origins):
            same_origin = self.hosts is not None and origin in (f"http://{host}", f"https://{host}")
            if not same_origin:
                return Refusal(403, ORIGIN_NOT_ALLOWED, "Origin not allowed (DNS rebinding protection).")
        return None


OPEN = HostRules(hosts=None, origins=None)


def exposure_rules(bind_host: str, allowed_hosts: Sequence[str], allowed_origins: Sequence[str]) -> HostRules:
    """The rules for a server bound to `bind_host`: loopback names always, the bound address (unless it is a
    wildcard), plus what the operator allows (a name without a port also on any port); `*` in `allowed_hosts`:
    no checks."""
    if "*" in allowed_hosts:
        return OPEN
    hosts = list(_LOOPBACK_HOSTS)
    if not is_loopback(bind_host) and bind_host not in ("0.0.0.0", "::"):
        name = f"[{bind_host}]" if ":" in bind_host else bind_host
        hosts += [name, f"{name}:*"]
    for host in allowed_hosts:
        hosts.append(host)
        if not host.endswith(":*") and not re.search(r":\d+$", host.rsplit("]", 1)[-1]):
            hosts.append(host + ":*")
    origins = [*_LOOPBACK_ORIGINS, *allowed_origins]
    return HostRules(hosts=tuple(dict.fromkeys(hosts)), origins=tuple(dict.fromkeys(origins)))


class HostOriginCheck:
    def __init__(self, app: ASGIApp, rules: HostRules, refuse: Refuse, *, open_paths: Iterable[str] = ()) -> None:
        self.app = app
        self.rules = rules
        self.refuse = refuse
        self._open = OpenPaths(open_paths)
        self._off = rules == OPEN

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._off and scope["type"] == "http" and not self._open.includes(scope):
            host = origin = None
            for key, value in scope.get("headers", ()):
                if key == b"host":
                    host = value.decode("latin-1")
                elif key == b"origin":
                    origin = value.decode("latin-1")
            refusal = self.rules.refusal(host, origin)
            if refusal is not None:
                await self.refuse(scope, refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)
