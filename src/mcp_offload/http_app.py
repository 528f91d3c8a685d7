"""Serving over the network: streamable HTTP at /mcp and SSE at /sse + /messages/, from one process, with /healthz.

What this module adds around the SDK transports, and why:

- **Who may connect**: an optional bearer token per principal (`auth.py`); binding a non-loopback address without
  one is refused unless the operator says `allow_open`. Host/Origin checks (DNS-rebinding protection) are on by
  default and configurable for reverse proxies.
- **Isolation**: `ConnectionScope` (scope.py) gives every handshake-era session its own store scope and 2026-07-28
  requests the principal's scope (or the anonymous, non-enumerable one).
- **Limits with clear errors**: body size (413, JSON-RPC body), open sessions (503), idle sessions expire (the SDK
  does it for streamable HTTP; this module does it for SSE, whose transport has no such knob).
- **Graceful shutdown**: on SIGTERM stop accepting, refuse new MCP requests, let in-flight ones finish (bounded by a
  grace period), then close the long-lived SSE streams and stop; the caller closes the services afterwards.
- **Logs**: JSON lines on stderr; at INFO one per HTTP request (`mcp_offload.http`) and one per MCP request
  (`mcp_offload.requests`: method, tool, outcome, ms, principal fingerprint); tokens never appear.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import os
import re
import signal
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import mcp.types as types
import uvicorn
from mcp.server import ServerRequestContext
from mcp.server.runner import serve_dual_era_loop
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from sse_starlette.sse import AppStatus
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_offload import __version__
from mcp_offload.auth import BearerAuthMiddleware, parse_tokens, principal_label, principal_of
from mcp_offload.errors import OffloadError
from mcp_offload.proxy import ProxyConfig, open_proxy
from mcp_offload.scope import ConnectionScope
from mcp_offload.server import Extension, OffloadServer, build_server
from mcp_offload.services import Services, build_services
from mcp_offload.settings import Settings

log = logging.getLogger(__name__)
access_log = logging.getLogger("mcp_offload.http")
request_log = logging.getLogger("mcp_offload.requests")

Transport = Literal["http", "sse", "both"]
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
SHUTTING_DOWN = -32000  # JSON-RPC server error: the server is draining


class RefusedConfig(OffloadError):
    """A network configuration the server will not start with (the message says what to change)."""


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """Everything about serving over HTTP; `Settings` stays about the store and the tools."""

    transport: Transport = "http"
    host: str = "127.0.0.1"
    port: int = 8765
    tokens: tuple[str, ...] = ()
    allow_open: bool = False
    allowed_hosts: tuple[str, ...] = ()  # extra Host values (reverse proxy names); "*" turns Host/Origin checks off
    allowed_origins: tuple[str, ...] = ()
    stateless: bool = False  # streamable HTTP without sessions (every request stands alone)
    json_response: bool = False  # answer POSTs with plain JSON instead of an SSE stream (no progress relayed)
    max_body_bytes: int = 32 * 1024 * 1024
    max_sessions: int = 1000  # per transport
    session_idle_timeout: float = 30 * 60.0
    shutdown_grace_s: float = 10.0  # how long in-flight calls may run on after SIGTERM
    mcp_path: str = "/mcp"
    sse_path: str = "/sse"
    messages_path: str = "/messages/"

    def __post_init__(self) -> None:
        if self.max_body_bytes <= 0 or self.max_sessions <= 0 or self.session_idle_timeout <= 0:
            raise RefusedConfig("--max-body-bytes, --max-sessions and --session-idle-timeout must be positive")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_exposure(options: HttpOptions) -> None:
    """Refuse to serve an open (tokenless) server beyond loopback unless the operator said so explicitly."""
    if not is_loopback(options.host) and not options.tokens and not options.allow_open:
        raise RefusedConfig(
            f"refusing to listen on {options.host} without a token: anyone who can reach it could read every "
            "output. Set --token (or MCP_OFFLOAD_TOKEN), or pass --allow-open if this network is trusted."
        )


def transport_security(options: HttpOptions) -> TransportSecuritySettings:
    """DNS-rebinding protection: loopback names always, the bound address, plus what the operator allows."""
    if "*" in options.allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*"]
    if not is_loopback(options.host) and options.host not in ("0.0.0.0", "::"):
        name = f"[{options.host}]" if ":" in options.host else options.host
        hosts += [name, f"{name}:*"]
    for host in options.allowed_hosts:
        hosts.append(host)
        if not host.endswith(":*") and not re.search(r":\d+$", host.rsplit("]", 1)[-1]):
            hosts.append(host + ":*")
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*", *options.allowed_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=_unique(hosts), allowed_origins=_unique(origins)
    )


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _rpc_error(status: int, code: int, message: str) -> JSONResponse:
    """An HTTP error whose body is a JSON-RPC error, so MCP clients surface `message` as is."""
    return JSONResponse({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}, status)


# -- drain: count in-flight MCP requests, refuse new ones while shutting down ---------------------------------
@dataclass
class _SseSession:
    """One SSE connection: its id (from the endpoint event), activity, and the scope that ends it."""

    cancel: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    id: str | None = None
    known: anyio.Event = field(default_factory=anyio.Event)
    last_active: float = field(default_factory=time.monotonic)
    in_flight: int = 0


class Drain:
    """Server middleware over every MCP request (every transport, both eras): the in-flight count a graceful
    shutdown waits on, refusal while draining, SSE session activity, and one structured log line per request."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.draining = False
        self.sse_sessions: dict[str, _SseSession] = {}
        self._idle: anyio.Event | None = None

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Callable[..., Awaitable[Any]]) -> Any:
        if ctx.request_id is None:  # a notification: nothing to wait for
            return await call_next(ctx)
        if self.draining:
            raise MCPError(code=SHUTTING_DOWN, message="mcp-offload is shutting down; reconnect and retry.")
        sse = self._sse_session(ctx)
        if self.in_flight == 0:
            self._idle = anyio.Event()
        self.in_flight += 1
        if sse is not None:
            sse.in_flight += 1
        started = time.perf_counter()
        outcome = "error"
        try:
            result = await call_next(ctx)
            outcome = "tool_error" if isinstance(result, dict) and result.get("isError") else "ok"
            return result
        finally:
            self.in_flight -= 1
            if self.in_flight == 0 and self._idle is not None:
                self._idle.set()
            if sse is not None:
                sse.in_flight -= 1
                sse.last_active = time.monotonic()
            if request_log.isEnabledFor(logging.INFO):
                _log_request(ctx, outcome, time.perf_counter() - started)

    def _sse_session(self, ctx: ServerRequestContext[Any, Any]) -> _SseSession | None:
        request = ctx.request
        if not self.sse_sessions or not isinstance(request, Request):
            return None
        session_id = request.query_params.get("session_id")
        return self.sse_sessions.get(session_id) if session_id else None

    async def wait_idle(self, grace_s: float) -> bool:
        """Wait until no MCP request is in flight (True) or `grace_s` passes (False)."""
        with anyio.move_on_after(grace_s):
            if self.in_flight and self._idle is not None:
                await self._idle.wait()
            return True
        return False


def _log_request(ctx: ServerRequestContext[Any, Any], outcome: str, elapsed_s: float) -> None:
    params = ctx.params or {}
    tool = params.get("name") if ctx.method == "tools/call" else None
    request_log.info(
        "%s %s",
        f"{ctx.method} {tool}" if tool else ctx.method,
        outcome,
        extra={
            "fields": {
                "mcp_method": ctx.method,
                "tool": tool,
                "outcome": outcome,
                "ms": round(elapsed_s * 1000, 2),
                "protocol": ctx.protocol_version,
                "principal": principal_label(_principal(ctx)),
            }
        },
    )


def _principal(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The scope policy's view of who is asking: the principal the auth middleware put on the HTTP request."""
    request = ctx.request
    return principal_of(request.scope) if isinstance(request, Request) else None


# -- SSE ------------------------------------------------------------------------------------------------------
_ENDPOINT_ID = re.compile(rb"session_id=([0-9a-f]{32})")


class SseEndpoint:
    """GET /sse: one MCP connection per stream, both eras, with a session cap and idle expiry."""

    def __init__(
        self,
        server: OffloadServer,
        transport: SseServerTransport,
        drain: Drain,
        options: HttpOptions,
        lifespan_state: Callable[[], Any],
    ) -> None:
        self.server = server
        self.transport = transport
        self.drain = drain
        self.options = options
        self.lifespan_state = lifespan_state
        self.open = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.drain.draining:
            await _rpc_error(503, SHUTTING_DOWN, "mcp-offload is shutting down")(scope, receive, send)
            return
        if self.open >= self.options.max_sessions:
            log.warning("refusing a new SSE session: %d are open", self.open)
            await _rpc_error(503, types.INTERNAL_ERROR, "Too many open sessions")(scope, receive, send)
            return
        session = _SseSession()

        async def watch_endpoint(message: Message) -> None:
            if session.id is None and message["type"] == "http.response.body":
                found = _ENDPOINT_ID.search(message.get("body", b""))
                if found:
                    session.id = found.group(1).decode("ascii")
                    self.drain.sse_sessions[session.id] = session
                    session.known.set()
            await send(message)

        self.open += 1
        entered = False
        try:
            async with self.transport.connect_sse(scope, receive, watch_endpoint) as (read, write):
                entered = True
                try:
                    with anyio.move_on_after(10):
                        await session.known.wait()
                    if session.id is None:
                        log.warning("SSE stream closed: its endpoint event was never sent")
                        return
                    with session.cancel:
                        async with anyio.create_task_group() as tg:
                            tg.start_soon(self._expire_when_idle, session)
                            await serve_dual_era_loop(
                                self.server,
                                read,
                                write,
                                lifespan_state=self.lifespan_state(),
                                session_id=session.id,
                                init_options=self.server.create_initialization_options(),
                            )
                            tg.cancel_scope.cancel()
                finally:
                    self._forget(session)  # from now on its POSTs get 404, while the stream winds down
                if session.cancel.cancelled_caught:
                    log.info("SSE session %s expired after %.0f s idle", (session.id or "")[:8], self._idle)
        except ValueError:
            if entered:
                raise
            # connect_sse refused the request and already answered (421 / 403 from the Host/Origin checks)
        finally:
            self.open -= 1
            self._forget(session)

    def _forget(self, session: _SseSession) -> None:
        if session.id is not None:
            self.drain.sse_sessions.pop(session.id, None)

    @property
    def _idle(self) -> float:
        return self.options.session_idle_timeout

    async def _expire_when_idle(self, session: _SseSession) -> None:
        while True:
            await anyio.sleep(min(self._idle / 4, 5.0))
            if session.in_flight == 0 and time.monotonic() - session.last_active >= self._idle:
                session.cancel.cancel()
                return

    async def post(self, scope: Scope, receive: Receive, send: Send) -> None:
        """POST /messages/?session_id=…: a live session's message (activity), else 404 like the SDK's."""
        found = _ENDPOINT_ID.search(scope.get("query_string", b""))
        session = self.drain.sse_sessions.get(found.group(1).decode("ascii")) if found else None
        if found and session is None and scope["method"] == "POST":
            await _rpc_error(404, types.INVALID_REQUEST, "Session not found")(scope, receive, send)
            return
        if session is not None:
            session.last_active = time.monotonic()
        try:
            await self.transport.handle_post_message(scope, receive, send)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # The session ended between the lookup and the hand-off; the SDK had already answered 202.
            log.info("dropped a message for an SSE session that just ended")


# -- middleware ------------------------------------------------------------------------------------------------
class BodyLimit:
    """413 with a JSON-RPC body for a declared Content-Length over the limit (the SDK transports also cap
    streamed bodies, with a plain-text 413)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for key, value in scope.get("headers", ()):
                if key == b"content-length":
                    try:
                        declared = int(value)
                    except ValueError:
                        declared = 0
                    if declared > self.max_bytes:
                        message = (
                            f"Request body too large: {declared:,} bytes, the limit is {self.max_bytes:,}. "
                            "Split the content, or ask the operator to raise --max-body-bytes."
                        )
                        await _rpc_error(413, types.INVALID_REQUEST, message)(scope, receive, send)
                        return
                    break
        await self.app(scope, receive, send)


class AccessLog:
    """One structured line per HTTP request (at its end, so long-lived streams log when they close)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not access_log.isEnabledFor(logging.INFO):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 0

        async def record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record)
        finally:
            headers = dict(scope.get("headers", ()))
            session = headers.get(b"mcp-session-id", b"").decode("latin-1")[:8]
            client = scope.get("client")
            access_log.info(
                "%s %s %s",
                scope["method"],
                scope["path"],
                status,
                extra={
                    "fields": {
                        "method": scope["method"],
                        "path": scope["path"],
                        "status": status,
                        "ms": round((time.perf_counter() - started) * 1000, 2),
                        "client": client[0] if client else None,
                        "principal": principal_label(principal_of(scope)),
                        "session": session or None,
                        "protocol": headers.get(b"mcp-protocol-version", b"").decode("latin-1") or None,
                    }
                },
            )


class JsonLogFormatter(logging.Formatter):
    """A JSON object per line: time, level, logger, message, and the record's `fields` (passed as `extra=`)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            data.update(fields)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def use_json_logs() -> None:
    for handler in logging.getLogger().handlers:
        handler.setFormatter(JsonLogFormatter())


# -- the app ------------------------------------------------------------------------------------------------------
@dataclass
class HttpApp:
    """The ASGI app plus the pieces the runner needs for a graceful shutdown."""

    app: ASGIApp
    drain: Drain


def build_http_app(services: Services, options: HttpOptions, *, extensions: Sequence[Extension] = ()) -> HttpApp:
    """The Starlette app serving `options.transport`. Does not own `services` (the caller closes them)."""
    server = build_server(services, scope_policy=ConnectionScope(principal=_principal), extensions=extensions)
    drain = Drain()
    server.middleware.append(drain)
    security = transport_security(options)
    routes: list[Route | Mount] = []
    manager: StreamableHTTPSessionManager | None = None
    sse_state: dict[str, Any] = {}

    async def healthz(request: Request) -> JSONResponse:
        body = {"status": "draining" if drain.draining else "ok", "version": __version__}
        return JSONResponse(body, status_code=503 if drain.draining else 200)

    routes.append(Route("/healthz", healthz, methods=["GET"]))
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
    if options.transport in ("sse", "both"):
        sse = SseServerTransport(
            options.messages_path, security_settings=security, max_request_body_size=options.max_body_bytes
        )
        endpoint = SseEndpoint(server, sse, drain, options, lambda: sse_state["lifespan"])

        routes.append(Route(options.sse_path, endpoint=endpoint, methods=["GET"]))
        routes.append(Mount(options.messages_path, app=endpoint.post))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if manager is not None:
                await stack.enter_async_context(manager.run())
            if options.transport in ("sse", "both"):
                sse_state["lifespan"] = await stack.enter_async_context(server.lifespan(server))
            yield

    app: ASGIApp = Starlette(routes=routes, lifespan=lifespan)
    app = BodyLimit(app, options.max_body_bytes)
    if options.tokens:
        app = BearerAuthMiddleware(app, options.tokens, open_paths=("/healthz",))
    app = AccessLog(app)
    return HttpApp(app=app, drain=drain)


# -- running under uvicorn -----------------------------------------------------------------------------------------
class _GracefulServer(uvicorn.Server):
    """uvicorn with a drain phase before its own shutdown, and no re-raised signal afterwards (exit code 0)."""

    def __init__(self, config: uvicorn.Config, drain: Drain, grace_s: float) -> None:
        super().__init__(config)
        self._drain = drain
        self._grace_s = grace_s

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        for server in self.servers:
            server.close()  # no new connections
        self._drain.draining = True  # no new MCP requests
        log.info("shutting down: waiting up to %.0f s for %d in-flight call(s)", self._grace_s, self._drain.in_flight)
        if not await self._drain.wait_idle(self._grace_s):
            log.warning("shutting down: %d call(s) still running after the grace period", self._drain.in_flight)
        AppStatus.should_exit = True  # now close the long-lived SSE streams
        await super().shutdown(sockets)


def http_options_from_args(args: Any, environ: dict[str, str] | None = None) -> HttpOptions:
    """HttpOptions from the CLI flags (cli.py) and MCP_OFFLOAD_TOKEN (comma-separated tokens)."""
    env = os.environ if environ is None else environ
    try:
        tokens = parse_tokens([*args.token, env.get("MCP_OFFLOAD_TOKEN", "")])
    except ValueError as exc:
        raise RefusedConfig(str(exc)) from None
    options = HttpOptions(
        transport=args.transport,
        host=args.host,
        port=args.port,
        tokens=tokens,
        allow_open=args.allow_open,
        allowed_hosts=_split(args.allowed_hosts),
        allowed_origins=_split(args.allowed_origins),
        stateless=args.stateless,
        json_response=args.json_response,
        max_body_bytes=args.max_body_bytes,
        max_sessions=args.max_sessions,
        session_idle_timeout=args.session_idle_timeout,
    )
    check_exposure(options)
    return options


def _split(value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


async def run_http(settings: Settings, options: HttpOptions, proxy: ProxyConfig | None = None) -> None:
    """The CLI entry: build the services (and the proxy's upstreams), serve until SIGTERM/SIGINT, then stop the
    upstreams and close the services (jq workers, store), in that order."""
    log_to_stderr_as_json()
    services = build_services(settings)
    try:
        async with open_proxy(services, proxy) as extensions:
            await serve_http(services, options, extensions=extensions)
    finally:
        with anyio.CancelScope(shield=True):
            await services.aclose()


async def serve_http(services: Services, options: HttpOptions, *, extensions: Sequence[Extension] = ()) -> None:
    """Serve until SIGTERM/SIGINT, then shut down gracefully. Closes nothing it did not open (not `services`)."""
    check_exposure(options)
    built = build_http_app(services, options, extensions=extensions)
    AppStatus.disable_automatic_graceful_drain()  # our shutdown drains calls first, then closes streams
    config = uvicorn.Config(
        built.app,
        host=options.host,
        port=options.port,
        log_config=None,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=max(1, int(options.shutdown_grace_s)),
    )
    server = _GracefulServer(config, built.drain, options.shutdown_grace_s)
    where = ", ".join(
        f"http://{options.host}:{options.port}{path}"
        for path, on in (
            (options.mcp_path, options.transport in ("http", "both")),
            (options.sse_path, options.transport in ("sse", "both")),
        )
        if on
    )
    log.warning(
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
    await server.serve()
    if not server.started:
        raise RefusedConfig(f"could not listen on {options.host}:{options.port} (see the log above)")


def log_to_stderr_as_json() -> None:
    """Structured logs on stderr for the HTTP transports (stdout is free there, but stderr is the convention)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr)
    use_json_logs()
