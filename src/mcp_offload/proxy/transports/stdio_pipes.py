"""A stdio upstream's pipes: the SDK client's streams and a `RawChannel`, from the child's pipes as loop callbacks.

The SDK's `stdio_client` parses every line into a pydantic message, hands it to the session through a zero-buffer
memory stream, and grows a `str` buffer chunk by chunk (`buffer + chunk`: a 5 MB result arriving in 64 KiB chunks
copies ~200 MB before it is whole). Here the child runs under an asyncio subprocess protocol (`_Child`): each line
is cut from its chunks once, in the event loop's own callback for the chunk, parsed once with pydantic-core's
parser (the standard `json` where it refuses: lone surrogates), and offered to the raw channel first, which wakes
the call waiting for it there and then (no reader task in between: a loop hop less per answer, ~7 % of a small
proxied call's added latency, measured with bench/proxy.py). What the channel does not take (the control traffic)
queues, in order, for a task that validates it into the SDK's message model and passes it on as before; reading
pauses while SDK_BACKLOG lines wait, so a flood blocks the child as a full pipe did. Writes from the SDK client and
from the channel go to the same pipe, one whole line per write.

Process handling is the SDK's own, kept the same: the child in a new session, its stderr to `errlog`; at the end,
stdin closed, 2 s to exit, then the process group terminated (`terminate_posix_process_tree`), then the pipes
closed. POSIX only (the transport uses the SDK's `stdio_client` elsewhere).
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, TextIO, cast

import anyio
import anyio.abc
import anyio.lowlevel
import mcp_types as types
from mcp import StdioServerParameters
from mcp.client._transport import TransportStreams
from mcp.client.stdio import get_default_environment
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from pydantic import ValidationError
from pydantic_core import from_json

from mcp_offload.pipe_flow import WriteFlow
from mcp_offload.proxy.transports.raw_channel import RawChannel

log = logging.getLogger(__name__)

EXIT_GRACE_S = 2.0  # the SDK's: the server may exit on its own after its stdin closes
KILL_GRACE_S = 2.0  # after SIGTERM to the group, before SIGKILL
REAP_WAIT_S = 2.0
WRITER_FLUSH_S = 0.5  # accepted messages may still be written before stdin closes
EXIT_POLL_S = 0.01
SDK_BACKLOG = 64  # control messages waiting for the SDK client before the child's stdout is no longer read
STDIN, STDOUT = 0, 1


def parse_line(line: bytes) -> Any:
    """One JSON-RPC line as Python values: pydantic-core's parser (the one the SDK's `validate_json` uses: integers
    of any size stay exact, ~3x faster than orjson on a big text result), or the standard library where it refuses
    the text (a lone surrogate; bytes that are not UTF-8 become U+FFFD, so a call gets its answer rather than
    waiting for its timeout). Raises ValueError when the line is not JSON at all, or nested deeper than the
    parsers go (it is read in the event loop's callback, where nothing else may escape)."""
    try:
        return from_json(line)
    except ValueError:
        try:
            return json.loads(line.decode("utf-8", "replace"))
        except RecursionError:
            raise ValueError("nested too deeply to parse") from None


class _Child(asyncio.SubprocessProtocol):
    """The child's pipes as the event loop's callbacks: its stdout cut into lines as each chunk arrives, every line
    handed to `on_line` inside the loop's own callback (no reader task stands between the pipe and a call waiting
    for its answer: one event-loop hop less per answer, as on the stdio front), its stdin with flow control, and
    the end of its stdout (`on_eof`)."""

    def __init__(self, on_line: Callable[[bytes], None], on_eof: Callable[[], None]) -> None:
        self._on_line = on_line
        self._on_eof = on_eof
        self._parts: list[bytes] = []  # the line being read, while it spans chunks
        # The last line is kept until the next long one is joined, then freed before that one is parsed: the parse's
        # values then reuse its pages instead of faulting in fresh ones (glibc frees a big block to the OS at once).
        # Freed right after its own parse instead, a 4 MB text result's parse took 1,955 page faults and 6.3 ms of
        # CPU against 440 and 3.6 ms (bench/proxy.py's 4 MB text, in the proxy; the first answer 1.1-1.2x slower).
        self._last = b""
        self._stdin = WriteFlow()
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.SubprocessTransport, transport)

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd != STDOUT or not isinstance(data, bytes):
            return
        start = 0
        while (end := data.find(b"\n", start)) >= 0:
            if self._parts:
                self._parts.append(data[start:end])
                line, self._parts = b"".join(self._parts), []
                self._last = b""  # the previous line's memory is freed now, for this one's parse to reuse
            else:
                line = data[start:end]
            start = end + 1
            self._on_line(line)
            self._last = line
        if start < len(data):
            self._parts.append(data[start:])

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == STDOUT:
            self._on_eof()
        elif fd == STDIN:
            self._stdin.lose(exc or BrokenPipeError("the server closed its stdin"))

    def pause_writing(self) -> None:
        self._stdin.pause()

    def resume_writing(self) -> None:
        self._stdin.resume()

    def pause_reading(self, paused: bool) -> None:
        """Stop (or resume) reading the child's stdout: its lines wait in the pipe, and the child blocks."""
        pipe = cast(asyncio.ReadTransport | None, self._pipe(STDOUT))  # uvloop's are no asyncio subclasses
        if pipe is not None and not pipe.is_closing():
            if paused:
                pipe.pause_reading()
            else:
                pipe.resume_reading()

    def _pipe(self, fd: int) -> asyncio.BaseTransport | None:
        return self.transport.get_pipe_transport(fd) if self.transport is not None else None

    async def write(self, line: bytes) -> None:
        """One whole line to the child's stdin, waiting while the pipe is full. Raises `anyio.ClosedResourceError`
        once stdin is closed or lost (the child exited or is exiting)."""
        pipe = cast(asyncio.WriteTransport | None, self._pipe(STDIN))
        if self._stdin.lost is not None or pipe is None or pipe.is_closing():
            raise anyio.ClosedResourceError
        pipe.write(line)
        try:
            await self._stdin.drained()
        except Exception as exc:  # the loss
            raise anyio.ClosedResourceError from exc


class _Pid:
    """What `terminate_posix_process_tree` reads of a process: its pid and (polled) return code."""

    def __init__(self, transport: asyncio.SubprocessTransport) -> None:
        self.pid = transport.get_pid()
        self._transport = transport

    @property
    def returncode(self) -> int | None:
        return self._transport.get_returncode()


@asynccontextmanager
async def stdio_pipes(
    params: StdioServerParameters, errlog: TextIO
) -> AsyncIterator[tuple[TransportStreams, RawChannel]]:
    """Start the server; yield the SDK client's `(read, write)` streams and the raw channel over the same pipes."""
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    for_sdk: deque[Any] = deque()  # what the raw channel did not take, in order: parsed messages, or the error
    sdk_wake = asyncio.Event()
    ended = False  # the child's stdout is at its end
    shutting_down = False
    reading_paused = False

    def on_line(line: bytes) -> None:
        """Each line of the child's stdout, in the event loop's callback: a raw channel answer wakes its caller
        here; the rest queues for the SDK client (reading pauses while SDK_BACKLOG lines wait)."""
        nonlocal reading_paused
        if shutting_down or not line.strip():
            return
        try:
            message: Any = parse_line(line)
        except ValueError as exc:
            log.warning("an upstream line is not JSON (%d bytes): %s", len(line), exc)
            message = exc
        else:
            if raw.take(message):
                return
        for_sdk.append(message)
        sdk_wake.set()
        if len(for_sdk) >= SDK_BACKLOG and not reading_paused:
            reading_paused = True
            child.pause_reading(True)

    def on_eof() -> None:
        nonlocal ended
        ended = True
        raw.close()  # every call still waiting fails at once; the lines before the end were delivered
        sdk_wake.set()

    child = _Child(on_line, on_eof)
    raw = RawChannel(child.write)
    transport, _ = await asyncio.get_running_loop().subprocess_exec(
        lambda: child,
        params.command,
        *params.args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=errlog,
        env=get_default_environment() | (params.env or {}),
        cwd=params.cwd,
        start_new_session=True,
    )
    writer_done = anyio.Event()

    async def to_sdk() -> None:
        """The control traffic, in order, validated into the SDK's message model, to the SDK client."""
        nonlocal reading_paused
        try:
            async with read_send:
                while True:
                    while for_sdk:
                        message = for_sdk.popleft()
                        if reading_paused and len(for_sdk) <= SDK_BACKLOG // 2:
                            reading_paused = False
                            child.pause_reading(False)
                        await read_send.send(_for_sdk(message))
                    if ended:
                        return
                    sdk_wake.clear()
                    await sdk_wake.wait()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            if not shutting_down:
                log.debug("the SDK client stopped reading the upstream: %r", exc)
            raw.close()  # the connection is over for the calls too: they fail now, not when the backlog stops reading

    async def writer() -> None:
        try:
            async with write_receive:
                async for session_message in write_receive:
                    message = session_message.message
                    if isinstance(message, types.JSONRPCRequest):
                        raw.note_sent({"params": message.params})
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await child.write(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end instead of a request hanging
        finally:
            writer_done.set()

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(to_sdk)
            tg.start_soon(writer)
            try:
                yield (read_stream, write_stream), raw
            finally:
                shutting_down = True
                with anyio.CancelScope(shield=True):
                    read_stream.close()
                    write_stream.close()
                    with anyio.move_on_after(WRITER_FLUSH_S):
                        await writer_done.wait()
                    await _stop(transport)
                    raw.close()
                    for stream in (read_stream, write_stream, read_send, write_receive):
                        await stream.aclose()
                    await anyio.lowlevel.checkpoint()
                tg.cancel_scope.cancel()
    finally:
        transport.close()  # also on a failure before the yield; the child has exited or been killed by now


def _for_sdk(message: Any) -> SessionMessage | Exception:
    """A parsed line as the SDK client reads it: its message model, or the error that says why it is none."""
    if isinstance(message, Exception):
        return message
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(message, by_name=False))
    except ValidationError as exc:
        log.warning("an upstream line is not a JSON-RPC message")
        return exc


async def _stop(transport: asyncio.SubprocessTransport) -> None:
    """Close stdin, give the server `EXIT_GRACE_S` to exit, then terminate its process group."""
    stdin = transport.get_pipe_transport(STDIN)
    if stdin is not None:
        stdin.close()
    process = _Pid(transport)
    if not await _exited(process, EXIT_GRACE_S):
        await terminate_posix_process_tree(cast(anyio.abc.Process, process), KILL_GRACE_S)
        if not await _exited(process, REAP_WAIT_S):
            log.warning("upstream process %d is still alive after the kill; abandoning it", process.pid)


async def _exited(process: _Pid, timeout_s: float) -> bool:
    """Whether the process ended within `timeout_s` (polling `returncode`: `wait()` also waits for the pipes)."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:  # noqa: ASYNC110 - nothing to wait on: returncode is polled (as the SDK)
            await anyio.sleep(EXIT_POLL_S)
        return True
    return False
