"""The stdio front's shortcut: a `tools/call` of a proxied tool answered from its JSON-RPC line.

Through the full path a small proxied call spends about half of the proxy's CPU in the MCP SDK's server answering
our own client: the stdin reader's pydantic parse, the dispatcher and a task per request, the OpenTelemetry
middleware, per-request contexts, the version sieve, the memory streams to the writer. The call itself needs none
of it: the proxy's `forward` (proxy/router.py: arguments by handle, the upstream call over its raw channel, the
offload policy, the accounting) is the same code either way. So the stdio reader offers every line to
`StdioShortcut.take` first; a line it takes never reaches the SDK, and its answer is written as one line.

It takes a line only when it is sure the full path would do exactly what it does, and decides that per line from
the bytes and one `orjson` parse:

- the line is a well-formed `tools/call` request (`jsonrpc` "2.0", an integer or string id, `params` with a string
  `name`, an object or no `arguments`, an object or no `_meta` with a valid `progressToken` if any; nothing else);
- the connection's era is known, learned from a tools/list or tools/call the full path answered on it
  (`OffloadServer.request_watchers`): a handshake-era connection then has its negotiated version and client, and
  its requests carry no 2026-07-28 envelope; on a 2026-07-28 connection each request's envelope is one the SDK's
  own check (`classify_inbound_request`) passes, and names its client plainly. Before that (no initialize yet, a
  probe, a new `initialize`, which forgets what was learned) every call takes the full path, which answers it as
  the SDK does;
- the tool is one of an upstream that is ready and takes tool calls as JSON lines (`ProxyRouter.ready_route`: a
  stdio child); our own tools, `proxy_status`, an unknown name, a server still starting or a remote one take the
  full path;
- no call with the same id is running here.

What the answer keeps: the client's id; the result shaped as the SDK shapes it for the era (the version's sieve,
and on 2026-07-28 `resultType` and the `serverInfo` stamp); the client's cap (its resource links) from its
clientInfo; progress relayed under the client's token; a `notifications/cancelled` for a call running here stops
it (the upstream is told, and nothing is answered, as the SDK does); an upstream's JSON-RPC error passed on as the
same error; at the end of input, calls still running are answered "Connection closed", as the SDK does. Big
results take the offload pipeline inside `forward`, as on the full path. `proxy_status` counts the calls
answered here (`_meta`, `shortcut_calls`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, fields
from typing import Any

import anyio
import mcp.types as types
import orjson
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic_core import to_json

from mcp_offload.core.tools import CallContext
from mcp_offload.mcp_server.client_caps import ClientCaps
from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.proxy.names import Route
from mcp_offload.proxy.router import ProxyRouter

log = logging.getLogger(__name__)

METHOD = "tools/call"
WriteLine = Callable[[bytes], Awaitable[None]]
CLOSING_WRITE_S = 1.0  # bound on answering "Connection closed" at the end (a wedged pipe must not hang shutdown)
_REQUEST_KEYS = frozenset({"jsonrpc", "id", "method", "params"})
_PARAM_KEYS = frozenset({"name", "arguments", "_meta"})
# each call's context is built field by field (a third of `dataclasses.replace`'s cost): a new field must be set here
_CALL_FIELDS = ("services", "session", "progress", "private_session", "cap")
assert tuple(field.name for field in fields(CallContext)) == _CALL_FIELDS, "CallContext changed: update _take_call"


@dataclass(frozen=True, slots=True)
class _Era:
    """What a request the full path answered showed about the connection."""

    version: str  # the negotiated (handshake era) protocol version, or a 2026-07-28 one
    modern: bool
    call: CallContext  # the full path's call context (scope, services); cap and progress are set per call


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    return None


class StdioShortcut:
    """Offered every stdio line first (`take`); answers the calls it is sure of inside `serving(write)`."""

    def __init__(self, server: OffloadServer, router: ProxyRouter) -> None:
        self._server = server
        self._router = router
        self._caps = ClientCaps(router.services.settings.client_caps)
        self._stamp = server.server_info_stamp  # a deep copy per access in the SDK; ours is only serialised
        self._era: _Era | None = None
        self._running: dict[Any, asyncio.Task[None]] = {}  # coerced request id → the running call
        self._cancelled: set[asyncio.Task[None]] = set()  # calls the client cancelled: never answered
        self._tasks: set[asyncio.Task[None]] | None = None  # the calls running, while serving
        self._write: WriteLine | None = None
        server.request_watchers.append(self._learn)

    # -- what the full path showed ------------------------------------------------------------------------------
    def _learn(self, ctx: Any, call: CallContext) -> None:
        version = ctx.protocol_version
        if isinstance(version, str):
            self._era = _Era(version, version in MODERN_PROTOCOL_VERSIONS, call)

    # -- the reader's side --------------------------------------------------------------------------------------
    @asynccontextmanager
    async def serving(self, write: WriteLine) -> AsyncIterator[None]:
        """Answer calls while inside (`write` puts one whole line on the wire); on the way out, calls still running
        are answered "Connection closed"."""
        # plain asyncio tasks, not an anyio task group: its per-task bookkeeping was a twentieth of a small call's CPU
        tasks: set[asyncio.Task[None]] = set()
        self._tasks, self._write = tasks, write
        try:
            yield
        finally:
            self._tasks = None
            for task in tasks:
                task.cancel()
            if tasks:
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(tasks, timeout=CLOSING_WRITE_S * 2)

    def take(self, line: bytes) -> bool:
        """Whether this line is answered here (the full path never sees it). Cheap for every other line."""
        if b'"tools/call"' in line:
            return self._take_call(line)
        if b"notifications/cancelled" in line:
            return self._take_cancel(line)
        if b'"initialize"' in line:
            self._era = None  # a (new) handshake: learn the connection again from the full path
        return False

    def _take_call(self, line: bytes) -> bool:
        era, tasks = self._era, self._tasks
        if era is None or tasks is None:
            return False
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False  # not JSON orjson takes (ints over 64 bits, lone surrogates, …): the full path says what
        if type(message) is not dict or message.keys() != _REQUEST_KEYS or message["jsonrpc"] != "2.0":
            return False
        if message["method"] != METHOD:
            return False
        request_id = message["id"]
        if type(request_id) is not int and type(request_id) is not str:
            return False
        params = message["params"]
        if type(params) is not dict or not params.keys() <= _PARAM_KEYS:
            return False
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if type(name) is not str or not (arguments is None or type(arguments) is dict):
            return False
        if meta is not None and type(meta) is not dict:
            return False
        token = meta.get("progressToken") if meta is not None else None
        if token is not None and type(token) is not int and type(token) is not str:
            return False
        if era.modern:
            cap = self._modern_cap(meta)
            if cap is None or meta is None:
                return False
            version = meta[PROTOCOL_VERSION_META_KEY]
        else:
            if meta is not None and PROTOCOL_VERSION_META_KEY in meta:
                return False  # the SDK refuses an enveloped request on a handshake connection: let it say so
            cap, version = era.call.cap, era.version
        key = coerce_request_id(request_id)
        if key in self._running:
            return False
        route = self._router.ready_route(name)
        if route is None:
            return False
        base = era.call
        call = CallContext(
            services=base.services,
            session=base.session,
            progress=_no_progress if token is None else self._progress_to(token),
            private_session=base.private_session,
            cap=cap,
        )
        task = asyncio.get_running_loop().create_task(self._answer(request_id, key, call, route, arguments, version))
        self._running[key] = task
        self._router.shortcut_calls += 1
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        task.add_done_callback(self._cancelled.discard)  # also a call cancelled before it started
        return True

    def _modern_cap(self, meta: Any) -> Any:
        """The client's cap from a 2026-07-28 request's envelope, or None unless the envelope is one the SDK's own
        check (`classify_inbound_request`) passes, plainly: the version and capabilities keys, a served 2026-07-28
        version, and a clientInfo that is absent or a name and a version. Anything else goes to the SDK to refuse
        (its check costs a fifth of this whole module's work per call, so the accepting case is checked here)."""
        if type(meta) is not dict or type(meta.get(CLIENT_CAPABILITIES_META_KEY)) is not dict:
            return None
        version = meta.get(PROTOCOL_VERSION_META_KEY)
        if type(version) is not str or version not in MODERN_PROTOCOL_VERSIONS:
            return None
        info = meta.get(CLIENT_INFO_META_KEY)
        if info is None:
            return self._caps.for_client(None)
        if type(info) is not dict or type(info.get("name")) is not str or type(info.get("version")) is not str:
            return None
        return self._caps.for_client(info["name"], info["version"])

    def _take_cancel(self, line: bytes) -> bool:
        """A `notifications/cancelled` for a call running here stops it; any other goes on to the SDK."""
        if not self._running:
            return False
        try:
            message = orjson.loads(line)
        except orjson.JSONDecodeError:
            return False
        if type(message) is not dict or message.get("method") != "notifications/cancelled" or "id" in message:
            return False
        params = message.get("params")
        request_id = params.get("requestId") if type(params) is dict else None
        if type(request_id) is not int and type(request_id) is not str:
            return False
        task = self._running.pop(coerce_request_id(request_id), None)
        if task is None:
            return False
        self._cancelled.add(task)
        task.cancel()
        return True

    # -- one call -------------------------------------------------------------------------------------------------
    async def _answer(
        self,
        request_id: int | str,
        key: Any,
        call: CallContext,
        route: Route,
        arguments: dict[str, Any] | None,
        version: str,
    ) -> None:
        task = asyncio.current_task()
        try:
            try:
                result = await self._router.forward(call, route, arguments)
                line = to_json({"jsonrpc": "2.0", "id": request_id, "result": self._shaped(result, version)})
            except MCPError as exc:  # the upstream's own JSON-RPC error, passed on as the full path does
                line = _error_line(request_id, exc.error)
            except Exception:
                log.exception("the stdio shortcut failed on a call of %s", route.public)
                error = types.ErrorData(code=types.INTERNAL_ERROR, message="Internal server error")
                line = _error_line(request_id, error)
            await self._send(line)
        except asyncio.CancelledError:
            if task in self._cancelled:  # the client cancelled it (the upstream was told): never answered
                self._cancelled.discard(task)
                return
            with anyio.move_on_after(CLOSING_WRITE_S, shield=True):  # the end of input: answered, as the SDK does
                closed = types.ErrorData(code=types.CONNECTION_CLOSED, message="Connection closed")
                await self._send(_error_line(request_id, closed))
            raise
        finally:
            if self._running.get(key) is task:
                del self._running[key]

    def _shaped(self, result: types.CallToolResult, version: str) -> dict[str, Any]:
        """The result as the SDK's server puts it on the wire for `version` (`ServerRunner._serialize`)."""
        dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        dumped = serialize_server_result(METHOD, version, dumped)
        if version in MODERN_PROTOCOL_VERSIONS:
            if dumped.get("resultType") is None:
                dumped["resultType"] = "complete"
            meta = dumped.get("_meta")
            if meta is None:
                dumped["_meta"] = {SERVER_INFO_META_KEY: self._stamp}
            elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
                dumped["_meta"] = {**meta, SERVER_INFO_META_KEY: self._stamp}
        return dumped

    def _progress_to(self, token: int | str) -> Callable[[float, float | None, str | None], Awaitable[None]]:
        async def progress(value: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": value}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            await self._send(to_json({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))

        return progress

    async def _send(self, line: bytes) -> None:
        write = self._write
        if write is None:
            return
        try:
            await write(line if line.endswith(b"\n") else line + b"\n")
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            log.debug("stdio shortcut: the client's pipe is gone: %s", exc)


def _error_line(request_id: int | str, error: types.ErrorData) -> bytes:
    message = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
    return message.model_dump_json(by_alias=True, exclude_unset=True).encode()


def stdio_shortcut_for(server: OffloadServer, extensions: list[Any]) -> StdioShortcut | None:
    """The shortcut for a stdio server with the proxy among its extensions; None when there is no proxy or the
    server shapes `tools/call` results in a way this module does not repeat (a cache hint, middleware of its own
    beyond the SDK's OpenTelemetry span)."""
    routers = [ext.router if hasattr(ext, "router") else ext for ext in extensions]
    router = next((r for r in routers if isinstance(r, ProxyRouter)), None)
    if router is None or server.cache_hints.get(METHOD) is not None or len(server.middleware) > 1:
        return None
    return StdioShortcut(server, router)
