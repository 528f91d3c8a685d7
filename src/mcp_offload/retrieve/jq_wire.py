"""The pool's side of the wire to a jq worker: whole frames over a non-blocking UNIX socket, awaited on the loop.

The frame format itself is `jq_worker.protocol` (shared with the worker). Invariants: a send or receive never
blocks the event loop (it waits for readiness instead); any socket failure, end of stream or oversized frame is
`WorkerGone`, so the pool treats every broken wire as a dead worker.
"""

from __future__ import annotations

import socket
from array import array
from typing import Any

import anyio

from mcp_offload.retrieve.jq_worker.protocol import FRAME, MAX_FRAME, decode_frame


class WorkerGone(Exception):
    """The worker closed its socket: it exited, crashed or was killed."""


async def send_all(sock: socket.socket, data: bytes | memoryview) -> None:
    with memoryview(data) as whole, whole.cast("B") as view:  # released on exit: the store may close an mmap
        offset, size = 0, len(view)
        while offset < size:
            try:
                offset += sock.send(view[offset:])
            except BlockingIOError:
                await anyio.wait_writable(sock)
            except OSError as exc:
                raise WorkerGone(str(exc)) from exc


async def send_with_fd(sock: socket.socket, data: bytes, fd: int) -> None:
    """Send a frame with a descriptor attached (SCM_RIGHTS) to its first byte."""
    fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", [fd]))]
    while True:
        try:
            sent = sock.sendmsg([data], fds)
            break
        except BlockingIOError:
            await anyio.wait_writable(sock)
        except OSError as exc:
            raise WorkerGone(str(exc)) from exc
    await send_all(sock, data[sent:])


async def recv_exact(sock: socket.socket, size: int) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except BlockingIOError:
            await anyio.wait_readable(sock)
            continue
        except OSError as exc:
            raise WorkerGone(str(exc)) from exc
        if not chunk:
            raise WorkerGone("end of stream")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


async def recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> dict[str, Any]:
    (length,) = FRAME.unpack(await recv_exact(sock, FRAME.size))
    if length > limit:
        raise WorkerGone("oversized frame")
    return decode_frame(await recv_exact(sock, length))
