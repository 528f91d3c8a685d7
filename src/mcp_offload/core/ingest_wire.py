"""The frames between the serving process and an ingest worker (`ingest_pool`, `ingest_worker`): an 8-byte
big-endian length, then that many bytes. A request's first byte says what it asks (`PREPARE`: a pickle of the
output's facts follows, and its bytes come as the next frame or are mapped; `PARSE`: a JSON document's bytes follow;
`PARSE_MAPPED`: where to map them; `PASSAGES`: an output whose passage index to build); answers are pickles, some
followed by more frames (`ingest_worker`). Both ends are our own code in the same installation; the pipes are
private to the two processes."""

from __future__ import annotations

from typing import IO

HEADER = 8
PREPARE = b"P"  # prepare one output: a pickle of (notes, name, source, handle, where) follows; its bytes mapped or next
PARSE = b"J"  # parse one JSON document: its bytes follow
PARSE_MAPPED = b"M"  # parse one JSON document the worker maps: a pickle of (path, size, (device, inode)) follows
PASSAGES = b"I"  # build one output's passage index: an 8-byte length, a pickle of its key, then the output's bytes


def send(pipe: IO[bytes], *pieces: bytes | bytearray | memoryview) -> None:
    """One frame of the pieces' bytes, written one after the other (a big body is not joined into a copy first)."""
    pipe.write(sum(len(piece) for piece in pieces).to_bytes(HEADER, "big"))
    for piece in pieces:
        pipe.write(piece)
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
