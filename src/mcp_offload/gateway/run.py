"""Running the gateway under uvicorn until SIGTERM/SIGINT.

`serve_gateway` serves a built `GatewayApp` (closes nothing it did not open); `run_gateway` (the CLI entry) also
builds and closes the services and the upstream client. On shutdown /healthz says "draining" while uvicorn stops
accepting and lets the requests in flight (streams included) finish, bounded by `shutdown_grace_s`.
"""

from __future__ import annotations

import logging

import anyio
import uvicorn

from mcp_offload.core.services import build_services
from mcp_offload.gateway.app import GatewayApp
from mcp_offload.gateway.options import GatewayConfigError, GatewayOptions
from mcp_offload.providers.registry import PROVIDERS
from mcp_offload.settings import Settings
from mcp_offload.uvicorn_server import ExitZeroServer
from mcp_offload.version import __version__

log = logging.getLogger("mcp_offload.gateway")


class _GatewayServer(ExitZeroServer):
    """uvicorn that says "draining" on /healthz while it shuts down, and exits 0 on SIGTERM (no re-raised signal)."""

    def __init__(self, config: uvicorn.Config, app: GatewayApp) -> None:
        super().__init__(config)
        self._gateway = app

    async def shutdown(self, sockets: list[object] | None = None) -> None:  # type: ignore[override]
        self._gateway.draining = True
        await super().shutdown(sockets)  # type: ignore[arg-type]


async def serve_gateway(app: GatewayApp) -> None:
    options = app.options
    config = uvicorn.Config(
        app,
        host=options.host,
        port=options.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        server_header=False,  # the upstream's own headers are relayed
        date_header=False,
        timeout_graceful_shutdown=max(1, int(options.shutdown_grace_s)),
    )
    server = _GatewayServer(config, app)
    log.info(  # the normal start-up line: INFO, shown at the default level (it was a WARNING)
        "mcp-offload %s gateway on http://%s:%d (%s, retrieval %s, %s)",
        __version__,
        options.host,
        options.port,
        ", ".join(f"{p.name}: {options.upstream.base(p) or 'not set'}" for p in PROVIDERS.values()),
        options.policy.retrieval,
        f"{len(options.tokens)} token(s)" if options.tokens else "no token",
    )
    await server.serve()
    if not server.started:
        raise GatewayConfigError(f"could not listen on {options.host}:{options.port} (see the log above)")


async def run_gateway(settings: Settings, options: GatewayOptions) -> None:
    services = build_services(settings)
    app = GatewayApp(services, options)
    try:
        await serve_gateway(app)
    finally:
        with anyio.CancelScope(shield=True):
            await app.aclose()
            await services.aclose()
