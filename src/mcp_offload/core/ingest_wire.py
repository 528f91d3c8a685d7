"""The frames between the serving process and an ingest worker (`ingest_pool`, `ingest_worker`): an 8-byte
big-endian length, then that many bytes (a pickle). Both ends are our own code in the same installation; the pipes
are private to the two processes."""

from __future__ import annotations

from typing import IO

HEADER = 8


def send(pipe: IO[bytes], payload: bytes) -> None:
    pipe.write(len(payload).to_bytes(HEADER, "big"))
    pipe.write(payload)
    pipe.flush()


def receive(pipe: IO[bytes]) -> bytes:
    """One frame; EOFError when the other end closed (at a frame boundary or inside one)."""
    size = int.from_bytes(_exactly(pipe, HEADER), "big")
    return _exactly(pipe, size)


def _exactly(pipe: IO[bytes], size: int) -> bytes:
    data = pipe.read(size)  # a buffered pipe reads until `size` bytes or the end
    if data is None or len(data) != size:
        raise EOFError("the other end closed the pipe")
    return data
