"""Running the gateway under uvicorn until SIGTERM/SIGINT, then shutting down gracefully (`web/server.py`).

`serve_gateway` serves a built `GatewayApp` (closes nothing it did not open); `run_gateway` (the CLI entry) also
builds and closes the services and the upstream client. On shutdown the gateway stops accepting connections,
/healthz says "draining", new requests get a 503 in their API's error document (retry: another instance answers),
and the requests in flight (streams included) finish, bounded by `shutdown_grace_s`. Under `--workers N` each worker
runs `run_gateway` with its `WorkerSlot` (web/workers.py), on the socket its parent bound.
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
from mcp_offload.version import __version__
from mcp_offload.web.server import DrainingServer
from mcp_offload.web.workers import WorkerSlot

log = logging.getLogger("mcp_offload.gateway")


async def serve_gateway(app: GatewayApp, slot: WorkerSlot | None = None) -> None:
    """Serve `app` until SIGTERM/SIGINT; as one of `--workers N` (`slot`), on the socket the parent bound."""
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
    server = DrainingServer(
        config, app.drain, options.shutdown_grace_s, on_started=slot.ready if slot is not None else None
    )
    log.info(  # the normal start-up line: INFO, shown at the default level (it was a WARNING)
        "mcp-offload %s gateway on http://%s:%d (%s, retrieval %s, %s)",
        __version__,
        options.host,
        options.port,
        ", ".join(f"{p.name}: {options.upstream.base(p) or 'not set'}" for p in PROVIDERS.values()),
        options.policy.retrieval,
        f"{len(options.tokens)} token(s)" if options.tokens else "no token",
    )
    await server.serve(sockets=[slot.listening_socket()] if slot is not None else None)
    if not server.started:
        raise GatewayConfigError(f"could not listen on {options.host}:{options.port} (see the log above)")


async def run_gateway(settings: Settings, options: GatewayOptions, slot: WorkerSlot | None = None) -> None:
    services = build_services(settings)
    if slot is not None:  # every worker's counts in the store at once: whichever worker answers /stats counts them
        services.savings.flush_interval_s = 0.0
    if settings.ingest_workers_at == "launch":  # a shared service: big outputs go to workers from the first
        services.ingest.start()
    app = GatewayApp(services, options)
    try:
        await serve_gateway(app, slot)
    finally:
        with anyio.CancelScope(shield=True):
            await app.aclose()
            await services.aclose()
