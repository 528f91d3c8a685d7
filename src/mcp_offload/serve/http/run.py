"""Running the HTTP app under uvicorn until SIGTERM/SIGINT, then shutting down gracefully.

The shutdown (`web/server.py`), in order: stop accepting connections, close the drain (new MCP requests are refused
by the gate), let the calls in flight finish (bounded by `HttpOptions.shutdown_grace_s`), then close the long-lived
SSE streams and let uvicorn stop. `run_http` (the CLI entry) also owns the services and the proxy's upstreams and
closes them afterwards.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio
import uvicorn
from sse_starlette.sse import AppStatus

from mcp_offload.core.services import Services, build_services
from mcp_offload.logs import log_to_stderr
from mcp_offload.mcp_server.extension import Extension
from mcp_offload.proxy import ProxyConfig, open_proxy
from mcp_offload.serve.http.app import build_http_app
from mcp_offload.serve.http.options import HttpOptions, RefusedConfig, check_exposure
from mcp_offload.settings import Settings
from mcp_offload.version import __version__
from mcp_offload.web.host_check import is_loopback
from mcp_offload.web.server import DrainingServer
from mcp_offload.web.workers import WorkerSlot

log = logging.getLogger(__name__)


async def run_http(
    settings: Settings, options: HttpOptions, proxy: ProxyConfig | None = None, slot: WorkerSlot | None = None
) -> None:
    """The CLI entry: build the services (and the proxy's upstreams), serve until SIGTERM/SIGINT, then stop the
    upstreams and close the services (jq workers, store), in that order. As one of `--workers N` (`slot`), on the
    socket the parent bound, with the savings counters written through at once (/stats, read from the store by
    whichever worker answers, then counts every worker's calls)."""
    if not logging.getLogger().handlers:  # the CLI set them up already; an embedding caller may not have
        log_to_stderr()
    services = build_services(settings)
    if slot is not None:
        services.savings.flush_interval_s = 0.0
    if settings.ingest_workers_at == "launch":  # a shared service: big outputs go to workers from the first
        services.ingest.start()
    try:
        async with open_proxy(services, proxy) as extensions:
            await serve_http(services, options, extensions=extensions, slot=slot)
    finally:
        with anyio.CancelScope(shield=True):
            await services.aclose()


async def serve_http(
    services: Services, options: HttpOptions, *, extensions: Sequence[Extension] = (), slot: WorkerSlot | None = None
) -> None:
    """Serve until SIGTERM/SIGINT, then shut down gracefully. Closes nothing it did not open (not `services`)."""
    check_exposure(options)
    built = build_http_app(services, options, extensions=extensions)
    # our shutdown drains calls first, then closes streams; sse_starlette leaves this staticmethod unannotated
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    config = uvicorn.Config(
        built.app,
        host=options.host,
        port=options.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=max(1, int(options.shutdown_grace_s)),
    )
    server = DrainingServer(
        config,
        built.drain,
        options.shutdown_grace_s,
        after_drain=_close_sse_streams,
        on_started=slot.ready if slot is not None else None,
    )
    where = ", ".join(
        f"http://{options.host}:{options.port}{path}"
        for path, on in (
            (options.mcp_path, options.transport in ("http", "both")),
            (options.sse_path, options.transport in ("sse", "both")),
        )
        if on
    )
    log.info(
        "mcp-offload %s serving %s (%s)",
        __version__,
        where,
        f"{len(options.tokens)} token(s)" if options.tokens else "no token",
    )
    if not is_loopback(options.host) and not options.allowed_hosts:
        log.warning(
            "Host checks accept only loopback names%s: pass --allowed-hosts with the names clients use to reach "
            "this server (or '*' to turn the checks off behind a proxy that does them)",
            "" if options.host in ("0.0.0.0", "::") else f" and {options.host}",
        )
    await server.serve(sockets=[slot.listening_socket()] if slot is not None else None)
    if not server.started:
        raise RefusedConfig(f"could not listen on {options.host}:{options.port} (see the log above)")


def _close_sse_streams() -> None:
    """After the drain: the long-lived SSE streams end (our shutdown drains calls first, then closes streams)."""
    AppStatus.should_exit = True
