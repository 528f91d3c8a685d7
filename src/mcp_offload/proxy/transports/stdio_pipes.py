"""A stdio upstream's pipes: the SDK client's streams and a `RawChannel`, from one reader and one writer.

The SDK's `stdio_client` parses every line into a pydantic message, hands it to the session through a zero-buffer
memory stream, and grows a `str` buffer chunk by chunk (`buffer + chunk`: a 5 MB result arriving in 64 KiB chunks
copies ~200 MB before it is whole). Here each line is cut from its chunks once, parsed once with pydantic-core's
parser (the standard `json` where it refuses: lone surrogates), and offered to the raw channel first;
what the channel does not take (the control traffic) is validated into the SDK's message model and passed on as
before. Writes from the SDK client and from the channel go to the same pipe, one whole line per write.

Process handling is the SDK's own, kept the same: the child in a new session, its stderr to `errlog`; at the end,
stdin closed, 2 s to exit, then the process group terminated (`terminate_posix_process_tree`), then the pipes
closed. POSIX only (the transport uses the SDK's `stdio_client` elsewhere).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

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

from mcp_offload.proxy.transports.raw_channel import RawChannel

log = logging.getLogger(__name__)

EXIT_GRACE_S = 2.0  # the SDK's: the server may exit on its own after its stdin closes
KILL_GRACE_S = 2.0  # after SIGTERM to the group, before SIGKILL
REAP_WAIT_S = 2.0
WRITER_FLUSH_S = 0.5  # accepted messages may still be written before stdin closes
EXIT_POLL_S = 0.01


def parse_line(line: bytes) -> Any:
    """One JSON-RPC line as Python values: pydantic-core's parser (the one the SDK's `validate_json` uses: integers
    of any size stay exact, ~3x faster than orjson on a big text result), or the standard library where it refuses
    the text (a lone surrogate; bytes that are not UTF-8 become U+FFFD, so a call gets its answer rather than
    waiting for its timeout). Raises ValueError when the line is not JSON at all."""
    try:
        return from_json(line)
    except ValueError:
        return json.loads(line.decode("utf-8", "replace"))


@asynccontextmanager
async def stdio_pipes(
    params: StdioServerParameters, errlog: TextIO
) -> AsyncIterator[tuple[TransportStreams, RawChannel]]:
    """Start the server; yield the SDK client's `(read, write)` streams and the raw channel over the same pipes."""
    process = await anyio.open_process(
        [params.command, *params.args],
        env=get_default_environment() | (params.env or {}),
        stderr=errlog,
        cwd=params.cwd,
        start_new_session=True,
    )
    stdin, stdout = process.stdin, process.stdout
    assert stdin is not None and stdout is not None, "the server is started with pipes"
    read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    raw = RawChannel(stdin.send)
    writer_done = anyio.Event()
    shutting_down = False

    async def deliver(line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = parse_line(line)
        except ValueError as exc:
            log.warning("an upstream line is not JSON (%d bytes): %s", len(line), exc)
            await read_send.send(exc)
            return
        if raw.take(message):
            return
        try:
            parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValidationError as exc:
            log.warning("an upstream line is not a JSON-RPC message (%d bytes)", len(line))
            await read_send.send(exc)
            return
        await read_send.send(SessionMessage(parsed))

    async def reader() -> None:
        parts: list[bytes] = []  # the line being read, while it spans chunks
        try:
            async with read_send:
                while True:
                    try:
                        chunk = await stdout.receive()
                    except anyio.EndOfStream:
                        return
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        if parts:
                            parts.append(chunk[start:end])
                            line, parts = b"".join(parts), []
                        else:
                            line = chunk[start:end]
                        await deliver(line)
                        start = end + 1
                    if start < len(chunk):
                        parts.append(chunk[start:])
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError) as exc:
            if not shutting_down:
                log.debug("reading the upstream's stdout ended: %r", exc)
        finally:
            raw.close()
            await _drain(stdout)

    async def writer() -> None:
        try:
            async with write_receive:
                async for session_message in write_receive:
                    message = session_message.message
                    if isinstance(message, types.JSONRPCRequest):
                        raw.note_sent({"params": message.params})
                    text = message.model_dump_json(by_alias=True, exclude_unset=True)
                    await stdin.send(text.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_send.aclose()  # the session sees the connection end instead of a request hanging
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
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
                await _stop(process)
                raw.close()
                for stream in (read_stream, write_stream, read_send, write_receive):
                    await stream.aclose()
                await anyio.lowlevel.checkpoint()
            tg.cancel_scope.cancel()


async def _drain(stdout: anyio.abc.ByteReceiveStream) -> None:
    """Read and drop the rest of the server's output, so a server still writing can exit (shielded; ends at EOF or
    when shutdown closes the pipe)."""
    with (
        anyio.CancelScope(shield=True),
        suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError),
    ):
        while True:
            await stdout.receive()


async def _stop(process: anyio.abc.Process) -> None:
    """Close stdin, give the server `EXIT_GRACE_S` to exit, then terminate its process group; close the pipes."""
    assert process.stdin is not None and process.stdout is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, EXIT_GRACE_S):
        await terminate_posix_process_tree(process, KILL_GRACE_S)
        if not await _exited(process, REAP_WAIT_S):
            log.warning("upstream process %d is still alive after the kill; abandoning it", process.pid)
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
    # the asyncio subprocess transport, closed now rather than at GC (which warns while a survivor holds a pipe);
    # nothing public exposes it, hence the attribute walk (as the SDK's stdio_client does)
    close = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()


async def _exited(process: anyio.abc.Process, timeout_s: float) -> bool:
    """Whether the process ended within `timeout_s` (polling `returncode`: `wait()` also waits for the pipes)."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:  # noqa: ASYNC110 - nothing to wait on: returncode is polled (as the SDK)
            await anyio.sleep(EXIT_POLL_S)
        return True
    return False
