"""The stdio transport: `(read, write)` streams for `Server.run` over this process's stdin/stdout.

The SDK's `stdio_server()` hands every line read, every write and every flush to a worker thread; on a busy 2-core
machine those hand-offs were the largest part of the proxy's per-call overhead that is not MCP machinery itself
(~0.7 ms a call). This module feeds the same streams from the event loop's own non-blocking pipes instead.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, suppress
from typing import Any, Protocol

from mcp.server.stdio import stdio_server

from mcp_offload.pipe_flow import WriteFlow
from mcp_offload.serve.stdio_rejects import AnsweringReadStream


class LineTap(Protocol):
    """Offered every line read before the SDK parses it (the proxy's shortcut: serve/stdio_shortcut.py)."""

    def take(self, line: bytes) -> bool:
        """Whether the line is answered by the tap (the SDK never sees it)."""
        ...

    def serving(self, write: Callable[[bytes], Awaitable[None]]) -> AbstractAsyncContextManager[None]:
        """Answer lines while inside; `write` puts one whole line on the wire."""
        ...


@asynccontextmanager
async def stdio_streams(tap: LineTap | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """`(read, write)` for `Server.run` over this process's stdin/stdout: the SDK's `stdio_server()`, fed by the
    event loop's own non-blocking pipes instead of worker threads.

    Why: the SDK reads every line, writes every message and flushes it in a worker thread. Those three hand-offs
    per call (thread wake-ups, GIL ping-pong) were the largest part of the proxy's overhead above a direct call
    that is not the MCP machinery itself: about 0.7 ms per small call on a busy 2-core machine.

    Same guarantees as the SDK's: while serving, fd 0 reads the null device and fd 1 writes to stderr (children
    and stray prints miss the wire); each message is fully handed to the pipe before the next one is taken (the
    write buffer's high-water mark is 0, so `flush` waits until it is empty, as a blocking flush would); the fds
    are restored on exit. Used only when stdin and stdout are pipes or sockets: a terminal or a file is left to the
    SDK, because making it non-blocking would change it for every process sharing it (and asyncio cannot poll
    files). Lines of any length are read (an `offload` call may carry megabytes). A line that is not a JSON-RPC
    message gets a JSON-RPC error back (stdio_rejects.py), not silence. `tap` (on the pipes only) is offered every
    line first and may answer it itself, one whole line per write beside the SDK's.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # pragma: no cover - anyio on trio
        loop = None
    if loop is None or sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        async with stdio_server() as (read, write):
            yield AnsweringReadStream(read, write), write
        return
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    _divert(0, os.open(os.devnull, os.O_RDONLY))
    try:
        _divert(1, os.dup(2))
    except OSError:  # no stderr: stray output goes nowhere rather than onto the wire
        _divert(1, os.open(os.devnull, os.O_WRONLY))
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.WriteTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=1 << 62, loop=loop)  # no line-length limit, like the SDK's readline
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(os.dup(wire_in), "rb", buffering=0)
        )
        write_transport, protocol = await loop.connect_write_pipe(
            _PipeWriter, os.fdopen(os.dup(wire_out), "wb", buffering=0)
        )
        write_transport.set_write_buffer_limits(high=0)  # flush = everything is in the pipe
        # stdio_server is typed for anyio's file wrappers; ours have the same async read/write/iteration surface
        wire_in_lines, wire_out_writer = _WireLines(reader, tap), _WireOut(write_transport, protocol)
        async with AsyncExitStack() as stack:
            if tap is not None:
                await stack.enter_async_context(tap.serving(wire_out_writer.write_line))
            async with stdio_server(stdin=wire_in_lines, stdout=wire_out_writer) as (read, write):  # type: ignore[arg-type]
                yield AnsweringReadStream(read, write), write
    finally:
        if read_transport is not None:
            read_transport.close()
        if write_transport is not None:  # its buffer is empty unless we were stopped mid-flush: then drop it,
            if write_transport.get_write_buffer_size():  # as the pipe goes back to blocking mode below
                write_transport.abort()
            else:
                write_transport.close()
        for fd, wire in ((0, wire_in), (1, wire_out)):
            with suppress(OSError):
                os.set_blocking(wire, True)  # the pipe as we found it, for whatever runs after us
            _divert(fd, wire)


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _divert(fd: int, to: int) -> None:
    """Point `fd` at `to`'s file and close `to`."""
    try:
        os.dup2(to, fd)
    finally:
        os.close(to)


class _WireLines:
    """`async for line in stdin`, as the SDK's reader loop wants it (UTF-8, undecodable bytes replaced)."""

    def __init__(self, reader: asyncio.StreamReader, tap: LineTap | None = None) -> None:
        self._reader = reader
        self._tap = tap

    def __aiter__(self) -> _WireLines:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            if self._tap is None or not self._tap.take(line):
                return line.decode("utf-8", "replace")


class _WireOut:
    """`await stdout.write(text)` / `await stdout.flush()`, as the SDK's writer loop wants it."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: _PipeWriter) -> None:
        self._transport = transport
        self._flow = protocol.flow

    async def write(self, text: str) -> None:
        self._flow.check()
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._flow.drained()

    async def write_line(self, line: bytes) -> None:
        """One whole line from a tap, beside the SDK's (each write is one line, so none interleave)."""
        self._flow.check()
        self._transport.write(line)
        await self._flow.drained()


class _PipeWriter(asyncio.BaseProtocol):
    """The stdout pipe's protocol: its flow control (`flow.drained()` returns once the transport's buffer is empty
    again; `flow.check()` raises once the client closed the pipe)."""

    def __init__(self) -> None:
        self.flow = WriteFlow()

    def pause_writing(self) -> None:
        self.flow.pause()

    def resume_writing(self) -> None:
        self.flow.resume()

    def connection_lost(self, exc: Exception | None) -> None:
        self.flow.lose(exc or BrokenPipeError("the client closed stdout"))
