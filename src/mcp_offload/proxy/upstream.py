"""One supervised connection to an upstream MCP server (stdio, SSE or streamable HTTP).

Each upstream lives in its own supervisor task, which owns the `mcp.Client` (an SDK client must be entered and
left in one task) and keeps a copy of the upstream's catalog (tools, resources, templates, prompts). Calls come
from request handlers in other tasks and share the connection. Failure stays local: an upstream that cannot
start, crashes or hangs turns into an `UpstreamUnavailable` naming it, while the other upstreams keep working.

- A crashed or failed upstream is restarted by the next call that needs it, with backoff: the first restart is
  immediate, then 1, 2, 4 … 60 s between attempts (a successful call resets it). No restart loop runs on its own.
- A hung call ends after the call timeout (the SDK sends the upstream a courtesy `notifications/cancelled`);
  the connection stays usable.
- Stdio servers run under a small reaper process (`_REAPER`): it leads the server's own process group and takes
  the whole group down when the server exits, when the SDK stops it, or when the proxy dies in any way, even
  SIGKILL (Linux: `PR_SET_PDEATHSIG`; elsewhere: it notices its parent changed within a second). Without it,
  `npx`/`uvx` launchers leave their node/python grandchildren running after a crash of the proxy.
- Upstream stderr is forwarded to ours, each line prefixed with the server name; the last lines are kept for
  the error message and the status tool.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2
import mcp.types as types
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.dispatcher import ProgressFnT
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_offload import __version__
from mcp_offload.proxy.config import RemoteTarget, StdioTarget, UpstreamSpec

log = logging.getLogger(__name__)

State = Literal["starting", "ready", "failed", "stopped"]

MAX_LIST_PAGES = 1000  # a paginator that never ends cannot hang the proxy
MAX_BACKOFF_S = 60.0
STDERR_TAIL_LINES = 20
STDERR_GRACE_S = 0.5  # how long a failed start waits for the server's last stderr lines
MAX_SSE_EVENT_BYTES = 512 * 1024 * 1024  # one event carries one whole result: allow multi-MB outputs
PING_TIMEOUT_S = 3.0
CLIENT_INFO = types.Implementation(name="mcp-offload-proxy", version=__version__)

# Runs as `python -I -S -c _REAPER <command> <args…>`: the leader of the server's process group (the SDK starts
# it in a new session). It forks the server and waits for: the server's exit, a signal (the SDK's SIGTERM to the
# group at shutdown), or the death of the proxy (Linux: PR_SET_PDEATHSIG sends SIGTERM at once; elsewhere a
# 1 s timer notices the new parent). Then it SIGTERMs the group, gives it 2 s, and SIGKILLs what is left.
# Portable POSIX only (macOS has neither prctl nor sigtimedwait).
_REAPER = r"""# mcp-offload: reaper of one upstream MCP server's process group
import os, signal, sys, time
class Stop(Exception):
    pass
def stop(signum, frame):
    raise Stop()
def check_parent(signum, frame):
    if os.getppid() != parent:
        raise Stop()
parent = os.getppid()
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
except Exception:
    pass
watched = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
for sig in watched:
    signal.signal(sig, stop)
signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # no Stop may land between fork() and keeping its pid
pid = os.fork()
if pid == 0:
    for sig in watched:
        signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    except OSError as exc:
        sys.stderr.write("cannot start %r: %s\n" % (sys.argv[1], exc.strerror))
    os._exit(127)
null = os.open(os.devnull, os.O_RDWR)
os.dup2(null, 0)
os.dup2(null, 1)
status, gone = None, False
try:
    signal.signal(signal.SIGALRM, check_parent)
    signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
    if os.getppid() != parent:
        raise Stop()
    status = os.waitpid(pid, 0)[1]
except Stop:  # may land after waitpid() reaped the server but before `status` was set: then ECHILD below
    pass
signal.setitimer(signal.ITIMER_REAL, 0)
for sig in (*watched, signal.SIGALRM):
    signal.signal(sig, signal.SIG_IGN)
try:
    os.killpg(0, signal.SIGTERM)
except OSError:
    pass
deadline = time.monotonic() + 2.0
while status is None and not gone and time.monotonic() < deadline:
    try:
        done, st = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        gone = True
        break
    if done:
        status = st
    else:
        time.sleep(0.02)
if status is None and not gone:
    os.killpg(0, signal.SIGKILL)
code = os.waitstatus_to_exitcode(status) if status is not None else 1
os._exit(code if code >= 0 else 128 - code)
"""


class UpstreamUnavailable(Exception):
    """The upstream cannot answer this call (down, crashed, timed out). The message is written for the model."""


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


CatalogListener = Callable[["Upstream", Catalog], Awaitable[None]]  # (upstream, its previous catalog)


class _StderrTail:
    """A pipe for one child's stderr: lines go on to our stderr (prefixed), the last few are kept, and EOF means
    the whole process group is gone (the reaper holds the pipe until the server has exited), so a server that
    died between calls is noticed at once and restarted by the next call instead of failing it."""

    def __init__(self, name: str, keep: deque[str], on_eof: Callable[[], None]) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = os.fdopen(write_fd, "w")
        self._keep = keep
        self._name = name
        self._on_eof = on_eof
        self._token = anyio.lowlevel.current_token()
        self.done = anyio.Event()  # EOF seen: every line has been read
        self._thread = threading.Thread(target=self._pump, args=(read_fd,), name=f"stderr-{name}", daemon=True)
        self._thread.start()

    def _pump(self, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as pipe:
            for raw in pipe:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._keep.append(line[:500])
                try:
                    sys.stderr.write(f"[{self._name}] {line}\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass
        with suppress(RuntimeError):  # RuntimeError: the event loop is gone, the proxy is shutting down
            anyio.from_thread.run_sync(self._finish, token=self._token)

    def _finish(self) -> None:
        self.done.set()
        self._on_eof()

    def close_writer(self) -> None:
        """Our copy of the write end: closed once the child has it, so EOF comes when the child is gone."""
        if not self.writer.closed:
            self.writer.close()


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
        self.restarts = 0
        self.protocol_version: str | None = None
        self._on_catalog_changed = on_catalog_changed
        self._client: Client | None = None
        self._lost = anyio.Event()  # set when the current connection is known to be dead
        self._transition = anyio.Event()  # set (and replaced) on every state change
        self._idle = False  # the supervisor waits for a call to ask for a restart
        self._restart = anyio.Event()  # set by a call that wants the upstream back
        self._refresh = anyio.Event()  # set when the upstream said its catalog changed
        self._failures = 0
        self._next_attempt = 0.0
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self._reaped = sys.platform != "win32"  # stdio children run under _REAPER
        self._tail: _StderrTail | None = None

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
        try:
            with anyio.CancelScope(deadline=anyio.current_time() + self.startup_timeout_s) as scope:
                async with self._open_client() as client:
                    catalog = await self._load_catalog(client)
                    scope.deadline = math.inf  # started: from now on only a lost connection or stop() ends it
                    self._client, ready = client, True
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
            if not ready and self._tail is not None:
                with anyio.move_on_after(STDERR_GRACE_S):  # its last words usually say why
                    await self._tail.done.wait()
            self._fail(_describe(exc), was_ready=ready, exc=exc)
        finally:
            self._client = None

    def _fail(self, reason: str, *, was_ready: bool, exc: BaseException | None = None) -> None:
        detail = reason
        tail = [line for line in self._stderr if line.strip()]
        if tail and not was_ready:
            detail += f"; its stderr ended with: {tail[-1][:300]}"
        self.last_error = detail
        delay = 0.0 if self._failures == 0 else min(MAX_BACKOFF_S, 2.0 ** (self._failures - 1))
        self._failures += 1
        self._next_attempt = time.monotonic() + delay
        log.warning("upstream %s %s: %s", self.name, "lost" if was_ready else "failed to start", detail)
        if exc is not None:
            log.debug("upstream %s failure", self.name, exc_info=exc)
        self._set_state("failed")

    @asynccontextmanager
    async def _open_client(self) -> AsyncIterator[Client]:
        target = self.spec.target
        async with AsyncExitStack() as stack:
            if isinstance(target, StdioTarget):
                params = self._stdio_params(target)
                lost = self._lost  # this connection's: a late EOF must not end the next one
                tail = self._tail = _StderrTail(
                    self.name, self._stderr, on_eof=lost.set if self._reaped else lambda: None
                )
                stack.callback(tail.close_writer)
                transport = stdio_client(params, errlog=tail.writer)
                client = self._client_for(transport)
                try:
                    await stack.enter_async_context(client)
                finally:
                    tail.close_writer()
            else:
                client = self._client_for(self._remote_transport(target, stack))
                await stack.enter_async_context(client)
            yield client

    def _client_for(self, transport: Any) -> Client:
        # mode="auto": 2026-07-28 when the upstream speaks it, else the handshake (the npm servers)
        return Client(transport, mode="auto", cache=None, message_handler=self._on_message, client_info=CLIENT_INFO)

    def _stdio_params(self, target: StdioTarget) -> StdioServerParameters:
        env = get_default_environment() | target.env
        if os.path.sep not in target.command and shutil.which(target.command, path=env.get("PATH")) is None:
            raise UpstreamUnavailable(f"command {target.command!r} was not found on PATH")
        if target.cwd is not None and not os.path.isdir(target.cwd):
            raise UpstreamUnavailable(f"its cwd {target.cwd!r} is not a directory")
        if not self._reaped:  # pragma: no cover - the SDK puts Windows children in a job object instead
            return StdioServerParameters(command=target.command, args=list(target.args), env=target.env, cwd=target.cwd)
        return StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", "-c", _REAPER, target.command, *target.args],
            env=target.env,
            cwd=target.cwd,
        )

    def _remote_transport(self, target: RemoteTarget, stack: AsyncExitStack) -> Any:
        if target.transport == "sse":
            return sse_client(target.url, headers=dict(target.headers), timeout=30, sse_read_timeout=3600)
        http = httpx2.AsyncClient(
            headers=dict(target.headers),
            timeout=httpx2.Timeout(30.0, read=max(300.0, self.call_timeout_s + 30.0)),
        )
        stack.push_async_callback(http.aclose)
        return streamable_http_client(target.url, http_client=http, max_sse_event_size=MAX_SSE_EVENT_BYTES)

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
        try:
            result = await client.call_tool(name, arguments, read_timeout_seconds=timeout, progress_callback=progress)
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                self._lose(client)
                raise UpstreamUnavailable(
                    f"MCP server {self.name!r} closed the connection during the call to {name!r} (it may have "
                    "crashed); the call may or may not have taken effect. It will be restarted on the next call."
                ) from None
            if exc.code == types.REQUEST_TIMEOUT:
                raise UpstreamUnavailable(
                    f"MCP server {self.name!r} did not answer the call to {name!r} within {timeout:g} s; the call "
                    "was cancelled. Retry with smaller arguments, or later."
                ) from None
            raise
        except RuntimeError as exc:  # the SDK's outputSchema check of the upstream's own result
            raise UpstreamUnavailable(
                f"MCP server {self.name!r} returned an invalid result for {name!r}: {exc}"
            ) from None
        self._failures = 0
        if not isinstance(result, types.CallToolResult):
            raise UpstreamUnavailable(f"MCP server {self.name!r} answered {name!r} with an unsupported result type.")
        return result

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        client = await self._connected()
        return await self._request(client, client.read_resource(uri), f"reading {uri[:200]!r}")

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        client = await self._connected()
        return await self._request(client, client.get_prompt(name, arguments), f"getting prompt {name!r}")

    async def _request(self, client: Client, request: Awaitable[Any], what: str) -> Any:
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
                    await client.send_ping()
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
