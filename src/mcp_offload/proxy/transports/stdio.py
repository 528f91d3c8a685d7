"""Stdio upstreams: a child process per connection, run under the reaper, its stderr pumped to ours.

- The child runs under a small reaper process (`proxy/reaper.py`, run as `python -I -S <path> <command> <args…>`):
  it leads the server's own process group and takes the whole group down when the server exits, when the SDK
  stops it, or when the proxy dies in any way, even SIGKILL (Linux: `PR_SET_PDEATHSIG`; elsewhere: it notices its
  parent changed within a second). Without it, `npx`/`uvx` launchers leave their node/python grandchildren
  running after a crash of the proxy.
- Its stderr is logged (one INFO record per line, with the server's name); the last lines are kept (in the
  supervisor's `Link.stderr`) for the error message and the status tool. EOF on that pipe means the whole
  process group is gone, so the connection is marked lost at once.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from pathlib import Path

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp import Client, StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import stdio_client

from mcp_offload.proxy.config import StdioTarget
from mcp_offload.proxy.transports.base import Link, UpstreamTransport, UpstreamUnavailable
from mcp_offload.proxy.transports.stdio_pipes import stdio_pipes
from mcp_offload.proxy.upstream_env import upstream_environment

stderr_log = logging.getLogger("mcp_offload.upstream")  # each stderr line of a child, as an INFO record
REAPER = Path(__file__).resolve().parent.parent / "reaper.py"  # package data (see pyproject.toml)
REAPED = sys.platform != "win32"  # the SDK puts Windows children in a job object instead


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
                stderr_log.info("%s", line, extra={"fields": {"server": self._name}})
        with suppress(RuntimeError):  # RuntimeError: the event loop is gone, the proxy is shutting down
            anyio.from_thread.run_sync(self._finish, token=self._token)

    def _finish(self) -> None:
        self.done.set()
        self._on_eof()

    def close_writer(self) -> None:
        """Our copy of the write end: closed once the child has it, so EOF comes when the child is gone."""
        if not self.writer.closed:
            self.writer.close()


class _Opened:
    """Streams already open, as the SDK `Client` takes a transport: an async context manager yielding them."""

    def __init__(self, streams: TransportStreams) -> None:
        self._streams = streams

    async def __aenter__(self) -> TransportStreams:
        return self._streams

    async def __aexit__(self, *exc: object) -> None:
        return None


class StdioTransport(UpstreamTransport):
    def __init__(self, target: StdioTarget, *, call_timeout_s: float) -> None:
        self.target = target

    @asynccontextmanager
    async def connect(self, link: Link) -> AsyncIterator[Client]:
        params = self.params()
        lost = link.lost  # this connection's: a late EOF must not end the next one
        async with AsyncExitStack() as stack:
            tail = _StderrTail(link.name, link.stderr, on_eof=lost.set if REAPED else lambda: None)
            link.stderr_done = tail.done
            stack.callback(tail.close_writer)
            try:
                if REAPED:  # our own pipes: the SDK client's streams plus the raw channel for tool calls
                    streams, link.raw = await stack.enter_async_context(stdio_pipes(params, tail.writer))
                    client = link.client_for(_Opened(streams))
                else:  # pragma: no cover - Windows: the SDK's transport (its job objects), SDK calls only
                    client = link.client_for(stdio_client(params, errlog=tail.writer))
                await stack.enter_async_context(client)
            finally:
                tail.close_writer()
            yield client

    def params(self) -> StdioServerParameters:
        target = self.target
        env = upstream_environment(
            os.environ, inherit=target.inherit_env, pass_env=target.pass_env, entry_env=target.env
        )
        if os.path.sep not in target.command and shutil.which(target.command, path=env.get("PATH")) is None:
            raise UpstreamUnavailable(f"command {target.command!r} was not found on PATH")
        if target.cwd is not None and not os.path.isdir(target.cwd):
            raise UpstreamUnavailable(f"its cwd {target.cwd!r} is not a directory")
        if not REAPED:  # pragma: no cover - the SDK puts Windows children in a job object instead
            return StdioServerParameters(command=target.command, args=list(target.args), env=env, cwd=target.cwd)
        return StdioServerParameters(
            command=sys.executable,
            args=["-I", "-S", str(REAPER), target.command, *target.args],
            env=env,
            cwd=target.cwd,
        )
