"""The ASGI app: streamable HTTP at /mcp and SSE at /sse + /messages/ from one Starlette app, with /healthz, the
savings figures at /stats and a status page at / (both behind the bearer auth, like /mcp).

`build_http_app` wires the pieces of this package together: the MCP server with its scope policy (`ConnectionScope`
keyed by the authenticated principal) and its server middleware (shutdown gate, in-flight count, SSE activity,
request log, outermost first), the SDK transports with the Host/Origin checks and limits, and the ASGI middleware
(access log ⊃ Host/Origin check ⊃ bearer auth ⊃ body limit ⊃ routes). It returns what the runner needs for a
graceful shutdown.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from mcp_offload.core.services import Services
from mcp_offload.gateway.status import gateway_stats
from mcp_offload.mcp_server.extension import Extension
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.scoping import ConnectionScope
from mcp_offload.serve.http.access_log import AccessLog
from mcp_offload.serve.http.auth import BearerAuthMiddleware, TokenCheck, request_principal
from mcp_offload.serve.http.body_limit import BodyLimit
from mcp_offload.serve.http.browser_login import BrowserSessions, login_endpoint
from mcp_offload.serve.http.host_check import HostOriginCheck
from mcp_offload.serve.http.in_flight import InFlight
from mcp_offload.serve.http.options import HttpOptions, transport_security
from mcp_offload.serve.http.request_log import RequestLog
from mcp_offload.serve.http.shutdown_gate import ShutdownGate
from mcp_offload.serve.http.sse import SseEndpoint
from mcp_offload.serve.http.sse_sessions import SseSessions
from mcp_offload.serve.http.stats_endpoint import stats_endpoint
from mcp_offload.serve.http.status_page import status_page
from mcp_offload.version import __version__


@dataclass
class HttpApp:
    """The ASGI app plus the pieces the runner needs for a graceful shutdown."""

    app: ASGIApp
    gate: ShutdownGate
    in_flight: InFlight


def build_http_app(services: Services, options: HttpOptions, *, extensions: Sequence[Extension] = ()) -> HttpApp:
    """The Starlette app serving `options.transport`. Does not own `services` (the caller closes them)."""
    server = build_server(services, scope_policy=ConnectionScope(principal=request_principal), extensions=extensions)
    serves_sse = options.transport in ("sse", "both")
    gate, in_flight, sse_sessions = ShutdownGate(), InFlight(), SseSessions()
    server.middleware.append(gate)  # refused requests are neither counted nor logged
    server.middleware.append(in_flight)
    if serves_sse:
        server.middleware.append(sse_sessions)
    server.middleware.append(RequestLog())
    security = transport_security(options)
    routes: list[Route | Mount] = []
    manager: StreamableHTTPSessionManager | None = None
    sse_state: dict[str, Any] = {}

    async def healthz(request: Request) -> JSONResponse:
        body = {"status": "draining" if gate.draining else "ok", "version": __version__}
        return JSONResponse(body, status_code=503 if gate.draining else 200)

    routes.append(Route("/healthz", healthz, methods=["GET"]))

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

    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    app = BodyLimit(app, options.max_body_bytes)
    if options.tokens:
        app = BearerAuthMiddleware(app, options.tokens, open_paths=("/healthz", "/login"), browser=browser)
    app = HostOriginCheck(app, security, open_paths=("/healthz",))
    app = AccessLog(app)
    return HttpApp(app=app, gate=gate, in_flight=in_flight)
