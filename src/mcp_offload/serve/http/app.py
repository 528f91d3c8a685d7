"""The ASGI app: streamable HTTP at /mcp and SSE at /sse + /messages/ from one Starlette app, with /healthz, the
savings figures at /stats and a status page at / (both behind the bearer auth, like /mcp).

`build_http_app` wires the pieces of this package together: the MCP server with its scope policy (`ConnectionScope`
keyed by the authenticated principal) and its server middleware (shutdown gate, in-flight count, SSE activity,
request log, outermost first, over one `Drain`), the SDK transports with the Host/Origin checks and limits, and the
shared ASGI middleware of `web/` (access log ⊃ Host/Origin check ⊃ bearer auth ⊃ body limit ⊃ routes), whose
refusals MCP clients read as JSON-RPC errors (`refusals.py`). It returns what the runner needs for a graceful
shutdown.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Scope

from mcp_offload.core.services import Services
from mcp_offload.gateway.status import gateway_stats
from mcp_offload.mcp_server.extension import Extension
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.scoping import ConnectionScope
from mcp_offload.serve.http.auth import BearerAuthMiddleware, request_principal
from mcp_offload.serve.http.browser_login import BrowserSessions, login_endpoint
from mcp_offload.serve.http.in_flight import InFlight
from mcp_offload.serve.http.options import HttpOptions, transport_security
from mcp_offload.serve.http.refusals import mcp_refusal
from mcp_offload.serve.http.request_log import RequestLog
from mcp_offload.serve.http.shutdown_gate import ShutdownGate
from mcp_offload.serve.http.sse import SseEndpoint
from mcp_offload.serve.http.sse_sessions import SseSessions
from mcp_offload.serve.http.stats_endpoint import stats_endpoint
from mcp_offload.serve.http.status_page import status_page
from mcp_offload.web.access_log import AccessLog
from mcp_offload.web.body_limit import BodyLimit
from mcp_offload.web.drain import Drain
from mcp_offload.web.health import health_endpoint
from mcp_offload.web.host_check import HostOriginCheck, exposure_rules
from mcp_offload.web.token_check import TokenCheck

access_log = logging.getLogger("mcp_offload.serve.http")


@dataclass
class HttpApp:
    """The ASGI app plus the pieces the runner needs for a graceful shutdown."""

    app: ASGIApp
    gate: ShutdownGate
    in_flight: InFlight
    drain: Drain  # the one both count into and the runner closes and waits on


def build_http_app(services: Services, options: HttpOptions, *, extensions: Sequence[Extension] = ()) -> HttpApp:
    """The Starlette app serving `options.transport`. Does not own `services` (the caller closes them)."""
    server = build_server(services, scope_policy=ConnectionScope(principal=request_principal), extensions=extensions)
    serves_sse = options.transport in ("sse", "both")
    drain = Drain()
    gate, in_flight, sse_sessions = ShutdownGate(drain), InFlight(drain), SseSessions()
    server.middleware.append(gate)  # refused requests are neither counted nor logged
    server.middleware.append(in_flight)
    if serves_sse:
        server.middleware.append(sse_sessions)
    server.middleware.append(RequestLog())
    security = transport_security(options)
    routes: list[Route | Mount] = []
    manager: StreamableHTTPSessionManager | None = None
    sse_state: dict[str, Any] = {}

    routes.append(Route("/healthz", health_endpoint(drain), methods=["GET"]))

    async def gateway_figures() -> dict[str, Any]:
        return await gateway_stats(services)

    routes.append(Route("/stats", stats_endpoint(services.savings, gateway_figures), methods=["GET"]))
    routes.append(Route("/", status_page(services, extensions, gateway_figures), methods=["GET"]))
    browser = BrowserSessions() if options.tokens else None
    routes.append(
        Route("/login", login_endpoint(browser, TokenCheck(options.tokens).authenticate_token), methods=["GET", "POST"])
    )
    if options.transport in ("http", "both"):
        manager = StreamableHTTPSessionManager(
            app=server,
            stateless=options.stateless,
            json_response=options.json_response,
            security_settings=security,
            max_request_body_size=options.max_body_bytes,
            session_idle_timeout=options.session_idle_timeout,
            max_sessions=options.max_sessions,
        )
        routes.append(Route(options.mcp_path, endpoint=StreamableHTTPASGIApp(manager)))
    if serves_sse:
        sse = SseServerTransport(
            options.messages_path, security_settings=security, max_request_body_size=options.max_body_bytes
        )
        endpoint = SseEndpoint(server, sse, gate, sse_sessions, options, lambda: sse_state["lifespan"])

        routes.append(Route(options.sse_path, endpoint=endpoint, methods=["GET"]))
        routes.append(Mount(options.messages_path, app=endpoint.post))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if manager is not None:
                await stack.enter_async_context(manager.run())
            if serves_sse:
                sse_state["lifespan"] = await stack.enter_async_context(server.lifespan(server))
            yield

    refuse = mcp_refusal()
    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    app = BodyLimit(app, options.max_body_bytes, refuse)
    if options.tokens:
        app = BearerAuthMiddleware(app, options.tokens, open_paths=("/healthz", "/login"), browser=browser)
    rules = exposure_rules(options.host, options.allowed_hosts, options.allowed_origins)
    app = HostOriginCheck(app, rules, refuse, open_paths=("/healthz",))
    app = AccessLog(app, access_log, _mcp_fields)
    return HttpApp(app=app, gate=gate, in_flight=in_flight, drain=drain)


def _mcp_fields(scope: Scope) -> dict[str, Any]:
    """The access log's MCP fields: the session (a prefix of its id) and the protocol version the client sent."""
    session = protocol = None
    for key, value in scope.get("headers", ()):
        if key == b"mcp-session-id":
            session = value.decode("latin-1")[:8] or None
        elif key == b"mcp-protocol-version":
            protocol = value.decode("latin-1") or None
    return {"session": session, "protocol": protocol}
