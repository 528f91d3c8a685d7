"""The gateway's HTTP app: the LLM APIs of `mcp_offload.apis` rewritten and looped, everything else relayed untouched,
on the Starlette base and the shared middleware of the MCP HTTP service (`web/`).

    GET  /healthz                   ready or draining (open: no token, no Host check)
    POST /v1/compress, GET|POST /v1/retrieve[/{hash}], GET /health, GET /readyz
                                    the compression service (compress_api.py; /health open)
    GET  /stats, GET /              the gateway's figures (JSON, HTML): per session and in total, cost vs direct
    POST /v1/messages[?beta=true]   Anthropic Messages      rewrite_request, then the retrieval loop (turn.py)
    POST /v1/chat/completions       OpenAI Chat Completions (same)
    POST /v1/responses              OpenAI Responses        (same)
    POST /{v1beta|v1}/models/{model}:generateContent, :streamGenerateContent?alt=sse
                                    Gemini                  (same; providers.gemini.routes tells them from OpenAI's)
    (each provider's routes)        its APIs                (same: `providers.registry.call_for_request`)
    anything else                   relayed as is (/v1/messages/count_tokens, /v1/models, ...), streams streamed

Every request passes, in order, the access log (one line per request on `mcp_offload.gateway`, with the exchange's
figures: api, status, ms, stream, rewrite figures, loops, retrieval calls, upstream usage, session fingerprint;
credentials never appear), the Host/Origin check (the MCP HTTP service's rules), the gateway's own token
(`x-mcp-offload-token: T` or `Proxy-Authorization: Bearer T`; `Authorization` and `x-api-key` belong to the provider
and pass through), the drain (once shutting down, new requests get 503), and the body cap; access.py says which
requests are open and how a refusal is answered (in the provider's error document for the API called).
"""

from __future__ import annotations

import logging

from starlette.applications import Starlette
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_offload.core.services import Services
from mcp_offload.gateway.access import guarded
from mcp_offload.gateway.admission import BigTurns
from mcp_offload.gateway.api_route import ApiCallRoute
from mcp_offload.gateway.compress_api import CompressApi, CompressEndpoint
from mcp_offload.gateway.endpoint import ExchangeEndpoint
from mcp_offload.gateway.options import GatewayOptions
from mcp_offload.gateway.status import status_endpoint
from mcp_offload.gateway.turn import TurnContext
from mcp_offload.gateway.upstream import ProviderClient
from mcp_offload.web.access_log import AccessLog
from mcp_offload.web.drain import Drain
from mcp_offload.web.health import health_endpoint

log = logging.getLogger("mcp_offload.gateway")


class GatewayApp:
    """The ASGI app. Owns the upstream client (closed by `aclose`), not the services."""

    def __init__(self, services: Services, options: GatewayOptions, *, upstream: ProviderClient | None = None) -> None:
        self.services = services
        self.options = options
        self.upstream = upstream or ProviderClient(options.upstream)
        self.drain = Drain()  # closed and waited on by the server at shutdown (web/server.py)
        big_turns = BigTurns(services.settings.gateway_max_big_turns, services.ingest.workers)
        self.turns = TurnContext(services, options, self.upstream, big_turns)  # what every API call's turn uses
        self.compress_api = CompressApi(services, options.policy)  # Headroom's contract
        self._app = self._build()

    @property
    def fail_open_events(self) -> int:
        """Requests sent unrewritten because the store was down, since start (also on /healthz)."""
        return self.turns.fail_open_events

    async def aclose(self) -> None:
        await self.upstream.aclose()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)

    def _build(self) -> ASGIApp:
        options = self.options
        exchange = ExchangeEndpoint(self.turns, options.max_body_bytes)
        compress = CompressEndpoint(self.compress_api, options.max_body_bytes)
        status = status_endpoint(self.services)
        turns = self.turns
        health = health_endpoint(
            self.drain,
            lambda: {
                "service": "gateway",
                "fail_open_events": turns.fail_open_events,
                "big_turns": {"in_progress": turns.big_turns.in_progress, "shed": turns.big_turns.shed},
            },
        )
        routes: list[BaseRoute] = [
            Route("/healthz", health, methods=["GET"]),
            *(Route(path, compress) for path in ("/v1/compress", "/v1/retrieve", "/health", "/readyz")),
            Route("/v1/retrieve/{hash:path}", compress),
            Route("/stats", status, methods=["GET"]),
            Route("/", status, methods=["GET"]),
            ApiCallRoute(exchange),  # the providers' API calls, in the registry's order
            Route("/{path:path}", exchange),  # everything else: relayed
        ]
        app = Starlette(routes=routes)  # lifespan: nothing to start (run.py owns the services and the client)
        return AccessLog(guarded(app, options, self.drain), log)


__all__ = ["GatewayApp"]
