"""The wire between the pool and a jq worker, shared by both sides (stdlib only: the worker imports it too).

Both directions: 4-byte big-endian length + a JSON object. A request may carry one descriptor (the stored file)
or be followed by `size` raw bytes, or neither when it says `cached` (the server knows the worker holds that
input: every reply lists the cache); a reply is one frame. The worker's side reads blocking; the pool has its own
non-blocking reads and writes (`jq_wire`) on the same frames.

Also here, because both sides must agree on it: which programs cached values can serve (`cache_serves`).
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

FRAME = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024  # requests are small (program + options); replies are bounded by the output cap


def cache_serves(program: str, records: int) -> bool:
    """Whether cached values can stand in for the input stream of `program` (shared with the server).

    Only `input`, `inputs`, `input_line_number` and `input_filename` reach jq's input callback. A cached run has no
    callback, and then `input` fails with "break" and `inputs` is empty: what they do after the last value, so a
    single-value input is served to them too (the line number and file name builtins insist on the stream). The
    test is lexical and errs one way: the word anywhere, even in a string, sends the program to the stream.
    """
    if "input" not in program:
        return True
    return records == 1 and "input_" not in program


def encode_frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
    return FRAME.pack(len(body)) + body


def decode_frame(body: bytes) -> dict[str, Any]:
    message = json.loads(body.decode("utf-8", "surrogatepass"))
    if not isinstance(message, dict):
        raise ValueError("a frame must hold a JSON object")
    return message


def _recv_exact(sock: socket.socket, size: int, fds: list[int]) -> bytes | None:
    """Read exactly `size` bytes (collecting any passed descriptors); None on a clean EOF before the first byte."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        data, new_fds, _flags, _addr = socket.recv_fds(sock, size - got, 4)
        fds.extend(new_fds)
        if not data:
            if got == 0:
                return None
            raise EOFError("the server closed the socket mid-frame")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def read_request(sock: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    """The next request and the descriptors that came with it; None when the server has closed its end."""
    fds: list[int] = []
    head = _recv_exact(sock, FRAME.size, fds)
    if head is None:
        return None
    (length,) = FRAME.unpack(head)
    if length > MAX_FRAME:
        raise ValueError("request frame too large")
    body = _recv_exact(sock, length, fds)
    if body is None:
        raise EOFError("the server closed the socket mid-frame")
    return decode_frame(body), fds


def receive_bytes(sock: socket.socket, size: int) -> bytearray:
    """The `size` raw input bytes that follow a request sent without a descriptor."""
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        n = sock.recv_into(view[got:], size - got)
        if n == 0:
            raise EOFError("the server closed the socket mid-input")
        got += n
    return buffer


def drain(sock: socket.socket, size: int) -> None:
    """Skip `size` raw input bytes the worker has no use for (its cache answers the request)."""
    left = size
    while left > 0:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise EOFError("the server closed the socket mid-input")
        left -= len(chunk)
