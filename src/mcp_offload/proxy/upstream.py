"""Supervising one upstream MCP server: restart with backoff, timeouts, catalog, status. Connecting: transports/.

Each upstream lives in its own supervisor task, which owns the `mcp.Client` (an SDK client must be entered and
left in one task) and keeps a copy of the upstream's catalog (tools, resources, templates, prompts). Calls come
from request handlers in other tasks and share the connection. Failure stays local: an upstream that cannot
start, crashes or hangs turns into an `UpstreamUnavailable` naming it, while the other upstreams keep working.

- A crashed or failed upstream is restarted by the next call that needs it, with backoff: the first restart is
  immediate, then 1, 2, 4 … 60 s between attempts (a successful call resets it). No restart loop runs on its own.
- A hung call ends after the call timeout (the SDK sends the upstream a courtesy `notifications/cancelled`);
  the connection stays usable.
- Connecting is the transport's business, chosen once from the config target (`transports.transport_for`: stdio
  under the reaper, SSE, streamable HTTP); supervision never asks which one it holds. A stdio child's last
  stderr lines are kept here, for the error message and the status tool.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import httpx2
import mcp.types as types
from mcp import Client, MCPError
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_offload.proxy.config import UpstreamSpec
from mcp_offload.proxy.transports import Link, UpstreamUnavailable, transport_for
from mcp_offload.proxy.transports.raw_channel import ChannelClosed, ProgressFn, RawChannel
from mcp_offload.version import __version__

__all__ = ["Catalog", "Upstream", "UpstreamStatus"]

log = logging.getLogger(__name__)

State = Literal["starting", "ready", "failed", "stopped"]
_R = TypeVar("_R")

MAX_LIST_PAGES = 1000  # a paginator that never ends cannot hang the proxy
MAX_BACKOFF_S = 60.0
STDERR_TAIL_LINES = 20
EXPLAIN_LINES = 6  # stderr lines shown for a failed start (the error and the hints after it)
EXPLAIN_CHARS = 900
STDERR_GRACE_S = 0.5  # how long a failed start waits for the server's last stderr lines
PING_TIMEOUT_S = 3.0
CLIENT_INFO = types.Implementation(name="mcp-offload-proxy", version=__version__)


@dataclass(slots=True)
class Catalog:
    tools: list[types.Tool] = field(default_factory=list)
    resources: list[types.Resource] = field(default_factory=list)
    templates: list[types.ResourceTemplate] = field(default_factory=list)
    prompts: list[types.Prompt] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class UpstreamStatus:
    name: str
    transport: str
    state: State
    tools: int
    protocol_version: str | None
    restarts: int
    last_error: str | None
    stderr_tail: tuple[str, ...]
    last_error_at: float | None = None  # when the last failure happened (time.time())


CatalogListener = Callable[["Upstream", Catalog], Awaitable[None]]  # (upstream, its previous catalog)


class Upstream:
    """A supervised upstream. Start `run()` in a task group; call `call_tool` & co. from any task."""

    def __init__(
        self,
        spec: UpstreamSpec,
        *,
        call_timeout_s: float,
        startup_timeout_s: float,
        on_catalog_changed: CatalogListener | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec.name
        self.call_timeout_s = call_timeout_s
        self.startup_timeout_s = startup_timeout_s
        self.catalog = Catalog()
        self.catalog_version = 0  # bumped whenever `catalog` is replaced
        self.state: State = "starting"
        self.last_error: str | None = None
        self.last_error_at: float | None = None
        self.restarts = 0
        self.protocol_version: str | None = None
        self._on_catalog_changed = on_catalog_changed
        self._client: Client | None = None
        self._raw: RawChannel | None = None  # the connection's JSON-lines channel for tool calls (stdio), if any
        self._modern = False  # the connection speaks 2026-07-28 (each raw request carries the envelope)
        self._lost = anyio.Event()  # set when the current connection is known to be dead
        self._transition = anyio.Event()  # set (and replaced) on every state change
        self._idle = False  # the supervisor waits for a call to ask for a restart
        self._restart = anyio.Event()  # set by a call that wants the upstream back
        self._refresh = anyio.Event()  # set when the upstream said its catalog changed
        self._failures = 0
        self._next_attempt = 0.0
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._transport = transport_for(spec, call_timeout_s=call_timeout_s)

    # -- supervision ------------------------------------------------------------------------------------------
    async def run(self) -> None:
        """The supervisor loop: connect, serve until the connection is lost, then wait for a call to want it back.
        Runs until cancelled (the proxy's task group), which also stops the server process."""
        try:
            while True:
                await self._connect_and_serve()
                self._idle = True
                self._notify()
                await self._restart.wait()
                self._restart = anyio.Event()
                self._idle = False
                self.restarts += 1
        finally:
            self._set_state("stopped")

    def _notify(self) -> None:
        """Wake everyone waiting for a state change."""
        event, self._transition = self._transition, anyio.Event()
        event.set()

    def _set_state(self, state: State) -> None:
        self.state = state
        self._notify()

    async def _connect_and_serve(self) -> None:
        self._lost = anyio.Event()
        self._stderr.clear()
        self._set_state("starting")
        ready = False
        link = Link(self.name, self._client_for, self._lost, self._stderr)
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout_s) as scope:
                async with self._transport.connect(link) as client:
                    catalog = await self._load_catalog(client)
                    scope.deadline = math.inf  # started: from now on only a lost connection or stop() ends it
                    self._client, ready = client, True
                    self._raw, self._modern = link.raw, client.protocol_version in MODERN_PROTOCOL_VERSIONS
                    self.protocol_version = client.protocol_version
                    self.last_error = None
                    await self._install(catalog)
                    self._set_state("ready")
                    log.info("upstream %s ready (%s, %d tools)", self.name, client.protocol_version, len(catalog.tools))
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(self._refresh_loop, client)
                        if client.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS:
                            tg.start_soon(self._listen_loop, client)
                        await self._lost.wait()
                        tg.cancel_scope.cancel()
            if scope.cancelled_caught and not ready:
                self._fail(f"it did not start within {self.startup_timeout_s:g} s", was_ready=False)
            else:
                self._fail("the connection was lost", was_ready=ready)
        except Exception as exc:  # any failure of one upstream must stay local to it
            if not ready and link.stderr_done is not None:
                with anyio.move_on_after(STDERR_GRACE_S):  # its last words usually say why
                    await link.stderr_done.wait()
            self._fail(_describe(exc), was_ready=ready, exc=exc)
        finally:
            self._client = None
            self._raw = None

    def _fail(self, reason: str, *, was_ready: bool, exc: BaseException | None = None) -> None:
        detail = reason
        explanation = explain_from_stderr(self._stderr) if not was_ready else ""
        if explanation:
            detail += f"; its stderr ended with: {explanation}"
        self.last_error = detail
        self.last_error_at = time.time()
        delay = 0.0 if self._failures == 0 else min(MAX_BACKOFF_S, 2.0 ** (self._failures - 1))
        self._failures += 1
        self._next_attempt = time.monotonic() + delay
        log.warning("upstream %s %s: %s", self.name, "lost" if was_ready else "failed to start", detail)
        if exc is not None:
            log.debug("upstream %s failure", self.name, exc_info=exc)
        self._set_state("failed")

    def _client_for(self, transport: Any) -> Client:
        # mode="auto": 2026-07-28 when the upstream speaks it, else the handshake (the npm servers)
        return Client(transport, mode="auto", cache=None, message_handler=self._on_message, client_info=CLIENT_INFO)

    async def _load_catalog(self, client: Client) -> Catalog:
        caps = client.server_capabilities
        catalog = Catalog()
        if caps.tools is not None:
            catalog.tools = await _all_pages(client.list_tools, "tools")
        if caps.resources is not None:
            catalog.resources = await self._optional(_all_pages(client.list_resources, "resources"), "resources")
            catalog.templates = await self._optional(
                _all_pages(client.list_resource_templates, "resource_templates"), "resource templates"
            )
        if caps.prompts is not None:
            catalog.prompts = await self._optional(_all_pages(client.list_prompts, "prompts"), "prompts")
        return catalog

    async def _optional(self, listing: Awaitable[list[Any]], what: str) -> list[Any]:
        """Resources and prompts are extras: a server that advertises them but fails to list them keeps its tools."""
        try:
            return await listing
        except MCPError as exc:
            log.warning("upstream %s: listing %s failed (%s); none forwarded", self.name, what, exc.message)
            return []

    # -- catalog changes --------------------------------------------------------------------------------------
    async def _on_message(self, message: Any) -> None:
        """Handshake-era change notifications. Only flag them here: listing from inside the receive loop would
        wait on a response that this very loop has to deliver."""
        if isinstance(
            message,
            types.ToolListChangedNotification
            | types.ResourceListChangedNotification
            | types.PromptListChangedNotification,
        ):
            self._refresh.set()

    async def _listen_loop(self, client: Client) -> None:
        """2026-07-28 upstreams push nothing unless asked: hold a subscriptions/listen stream open."""
        try:
            async with client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as subscription:
                async for _event in subscription:
                    self._refresh.set()
        except Exception as exc:  # optional feature: a server without it just never changes for us
            log.debug("upstream %s: no change subscription (%s)", self.name, _describe(exc))

    async def _refresh_loop(self, client: Client) -> None:
        while True:
            await self._refresh.wait()
            self._refresh = anyio.Event()
            try:
                catalog = await self._load_catalog(client)
            except Exception as exc:
                log.warning("upstream %s: re-listing after a change failed: %s", self.name, _describe(exc))
                continue
            await self._install(catalog)

    async def _install(self, catalog: Catalog) -> None:
        if catalog == self.catalog:
            return
        old, self.catalog = self.catalog, catalog
        self.catalog_version += 1
        log.info("upstream %s catalog: %d tools", self.name, len(catalog.tools))
        if self._on_catalog_changed is not None:
            await self._on_catalog_changed(self, old)

    def poke(self) -> None:
        """Restart a failed upstream in the background if its backoff has passed (a tools/list does this: an
        upstream that never started has no tools, so no call would ever bring it back)."""
        if self.state == "failed" and self._idle and time.monotonic() >= self._next_attempt:
            self._restart.set()

    async def wait_started(self) -> None:
        """Wait until the first connection attempt has ended (ready or failed; bounded by the startup timeout).
        Later restarts are not waited for here: a listing must not hang on an upstream that hangs again."""
        while self.state == "starting" and self.restarts == 0:
            await self._transition.wait()

    # -- calls ----------------------------------------------------------------------------------------------
    async def _connected(self) -> Client:
        """The live client, restarting the upstream first if it is down and its backoff has passed."""
        requested = False
        while True:
            client = self._client
            if self.state == "ready" and client is not None and not self._lost.is_set():
                return client
            if self.state == "stopped":
                raise UpstreamUnavailable(f"MCP server {self.name!r} is stopped (the proxy is shutting down).")
            if self.state == "failed" and self._idle:
                if requested:
                    raise UpstreamUnavailable(
                        f"MCP server {self.name!r} could not be restarted: {self.last_error}. "
                        "The other servers are unaffected."
                    )
                wait = self._next_attempt - time.monotonic()
                if wait > 0:
                    raise UpstreamUnavailable(
                        f"MCP server {self.name!r} is down ({self.last_error}). The proxy will restart it on a call "
                        f"made after {math.ceil(wait)} s; the other servers are unaffected."
                    )
                self._restart.set()
                requested = True
            await self._transition.wait()

    @property
    def takes_raw_calls(self) -> bool:
        """Ready, and its connection takes `tools/call` as JSON lines (a stdio child: the raw channel)."""
        return self.state == "ready" and self._raw is not None and self._client is not None and not self._lost.is_set()

    def _lose(self, client: Client) -> None:
        if self._client is client:
            self._lost.set()

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        progress: ProgressFnT | None = None,
        timeout_s: float | None = None,
    ) -> types.CallToolResult:
        """Forward one call. Raises `UpstreamUnavailable` (down/crashed/timed out) or `MCPError` (the upstream's
        own JSON-RPC error, to pass through)."""
        client = await self._connected()
        timeout = self.call_timeout_s if timeout_s is None else timeout_s
        raw = self._raw
        if raw is not None:
            return await self._call_raw(client, raw, name, arguments, progress, timeout)
        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=timeout, progress_callback=progress)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lose(client)
                raise self._closed_during(name) from None
            if exc.code == types.REQUEST_TIMEOUT:
                raise self._timed_out(name, timeout) from None
            raise
        except RuntimeError as exc:  # the SDK's outputSchema check of the upstream's own result
            raise self._invalid_result(name, exc) from None
        self._failures = 0
        if not isinstance(result, types.CallToolResult):
            raise UpstreamUnavailable(f"MCP server {self.name!r} answered {name!r} with an unsupported result type.")
        return result

    async def _call_raw(
        self,
        client: Client,
        raw: RawChannel,
        name: str,
        arguments: dict[str, Any] | None,
        progress: ProgressFn | None,
        timeout: float,  # noqa: ASYNC109 - the raw channel applies it (and tells the upstream to cancel)
    ) -> types.CallToolResult:
        """`call_tool` over the raw channel: the same answers, errors and checks as the SDK client's call."""
        params: dict[str, Any] = {"name": name}
        if arguments is not None:
            params["arguments"] = arguments
        try:
            answer = await raw.request("tools/call", params, timeout_s=timeout, modern=self._modern, progress=progress)
        except ChannelClosed:
            self._lose(client)
            raise self._closed_during(name) from None
        except TimeoutError:
            raise self._timed_out(name, timeout) from None
        result = self._tool_result(name, answer)
        if not result.is_error:  # the SDK's outputSchema check, on what its call checks
            try:
                await client.session.validate_tool_result(name, result)
            except RuntimeError as exc:
                raise self._invalid_result(name, exc) from None
        self._failures = 0
        return result

    def _tool_result(self, name: str, answer: dict[str, Any]) -> types.CallToolResult:
        """The `tools/call` answer message as a result. Raises `MCPError` (the upstream's JSON-RPC error, passed
        through as the SDK client raises it) or `UpstreamUnavailable` (an answer that is no tool result)."""
        error = answer.get("error")
        if error is not None:
            try:
                data = types.ErrorData.model_validate(error)
            except ValidationError:
                malformed = f"MCP server {self.name!r} answered {name!r} with a malformed error."
                raise UpstreamUnavailable(malformed) from None
            raise MCPError.from_error_data(data)
        result = answer.get("result")
        kind = result.get("resultType") if isinstance(result, dict) and self._modern else None
        if kind not in (None, "complete"):
            raise UpstreamUnavailable(
                f"MCP server {self.name!r} answered {name!r} with a {str(kind)[:40]!r} result (it asks the client for "
                "input), which this proxy cannot relay."
            )
        try:
            return types.CallToolResult.model_validate(result, by_name=False)
        except ValidationError as exc:
            raise self._invalid_result(name, exc) from None

    def _closed_during(self, name: str) -> UpstreamUnavailable:
        return UpstreamUnavailable(
            f"MCP server {self.name!r} closed the connection during the call to {name!r} (it may have "
            "crashed); the call may or may not have taken effect. It will be restarted on the next call."
        )

    def _timed_out(self, name: str, timeout: float) -> UpstreamUnavailable:
        return UpstreamUnavailable(
            f"MCP server {self.name!r} did not answer the call to {name!r} within {timeout:g} s; the call "
            "was cancelled. Retry with smaller arguments, or later."
        )

    def _invalid_result(self, name: str, exc: Exception) -> UpstreamUnavailable:
        if isinstance(exc, ValidationError):  # one line: where and what, not pydantic's whole report
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
            where = ".".join(str(part) for part in first["loc"]) or "the result"
            exc = RuntimeError(f"{where}: {first['msg']}"[:300])
        return UpstreamUnavailable(f"MCP server {self.name!r} returned an invalid result for {name!r}: {exc}")

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        client = await self._connected()
        return await self._request(client, client.read_resource(uri), f"reading {uri[:200]!r}")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        client = await self._connected()
        return await self._request(client, client.get_prompt(name, arguments), f"getting prompt {name!r}")

    async def _request(self, client: Client, request: Awaitable[_R], what: str) -> _R:
        try:
            with anyio.fail_after(self.call_timeout_s):
                return await request
        except TimeoutError:
            raise UpstreamUnavailable(f"MCP server {self.name!r} did not answer {what} in time.") from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lose(client)
                raise UpstreamUnavailable(f"MCP server {self.name!r} closed the connection while {what}.") from None
            raise

    async def ping(self) -> bool:
        """Liveness for the status tool: a ready upstream that no longer answers is marked lost."""
        client = self._client
        if self.state != "ready" or client is None:
            return False
        try:
            with anyio.fail_after(PING_TIMEOUT_S):
                if client.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
                    # the session's ping: Client.send_ping warns (deprecated in 2026-07-28) even when the upstream
                    # speaks 2025-11-25, which is the only case we ping
                    await client.session.send_ping()
                else:  # ping is gone in 2026-07-28: the cheapest request left
                    await client.list_tools()
            return True
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lose(client)
            return False
        except TimeoutError:
            return False

    def status(self) -> UpstreamStatus:
        return UpstreamStatus(
            name=self.name,
            transport=self.spec.kind,
            state=self.state,
            tools=len(self.catalog.tools),
            protocol_version=self.protocol_version,
            restarts=self.restarts,
            last_error=self.last_error,
            stderr_tail=tuple(self._stderr)[-5:] if self.state != "ready" else (),
            last_error_at=self.last_error_at,
        )


async def _all_pages(fetch: Callable[..., Awaitable[Any]], attr: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page = await fetch(cursor=cursor)
        items.extend(getattr(page, attr))
        cursor = page.next_cursor
        if not cursor:
            return items
    log.warning("stopped listing %s after %d pages", attr, MAX_LIST_PAGES)
    return items


_REASON = re.compile(r"error|exception|fatal|fail|denied|not found|no such|cannot|can't|invalid|refused", re.I)


def explain_from_stderr(lines: Iterable[str]) -> str:
    """The few stderr lines that say why a server did not start, joined with " | ": its last lines (a launcher such
    as uvx often ends with a hint after the real error), plus the last line that reads like an error if it came
    earlier. At most EXPLAIN_LINES lines and EXPLAIN_CHARS characters, the newest kept."""
    kept = [line.strip() for line in lines if line.strip()]
    window = kept[-EXPLAIN_LINES:]
    earlier = [line for line in kept[: max(len(kept) - EXPLAIN_LINES, 0)] if _REASON.search(line)]
    if earlier and not any(_REASON.search(line) for line in window):
        window = [earlier[-1], "…", *window[1:]]
    chosen: list[str] = []
    size = 0
    for line in reversed(window):
        line = line[:300]
        if chosen and size + len(line) > EXPLAIN_CHARS:
            break
        chosen.insert(0, line)
        size += len(line) + 3
    return " | ".join(chosen)


def _describe(exc: BaseException) -> str:
    """One line for a failure, from inside exception groups too (HTTP transports raise those)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, UpstreamUnavailable):
        return str(exc)
    if isinstance(exc, MCPError):
        if exc.code == types.CONNECTION_CLOSED:
            return "it exited or closed the connection during startup"
        return f"error {exc.code}: {exc.message}"
    if isinstance(exc, httpx2.ConnectError):
        return "connection refused or host unreachable"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__
