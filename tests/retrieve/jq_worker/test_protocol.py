"""The wire between the pool and a jq worker: frames, descriptors passed along, raw input bytes, clean EOF."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_offload.retrieve.jq_worker.protocol import (
    FRAME,
    MAX_FRAME,
    cache_serves,
    decode_frame,
    drain,
    encode_frame,
    read_request,
    receive_bytes,
)


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        yield a, b


def test_frames_round_trip_any_text() -> None:
    message = {"program": '"é ☃ 😀 \\u0000"', "lone": "\ud800", "n": 1}
    frame = encode_frame(message)
    (length,) = FRAME.unpack(frame[: FRAME.size])
    assert length == len(frame) - FRAME.size
    assert decode_frame(frame[FRAME.size :]) == message
    with pytest.raises(ValueError, match="JSON object"):
        decode_frame(b"[1]")


def test_a_request_brings_its_descriptor_and_bytes(pair: tuple[socket.socket, socket.socket], tmp_path: Path) -> None:
    server, worker = pair
    stored = tmp_path / "out.json"
    stored.write_bytes(b'{"a": 1}')
    fd = os.open(stored, os.O_RDONLY)
    try:
        socket.send_fds(server, [encode_frame({"size": 8})], [fd])
    finally:
        os.close(fd)
    server.sendall(encode_frame({"size": 3}) + b"xyz" + encode_frame({"size": 4}) + b"skip")
    request, fds = read_request(worker) or ({}, [])
    assert request == {"size": 8} and len(fds) == 1
    with os.fdopen(fds[0], "rb") as passed:
        assert passed.read() == b'{"a": 1}'
    request, fds = read_request(worker) or ({}, [])
    assert (request, fds, bytes(receive_bytes(worker, 3))) == ({"size": 3}, [], b"xyz")
    assert read_request(worker) == ({"size": 4}, [])
    drain(worker, 4)
    server.close()
    assert read_request(worker) is None  # a clean EOF between requests


def test_broken_and_oversized_frames_are_refused(pair: tuple[socket.socket, socket.socket]) -> None:
    server, worker = pair
    server.sendall(FRAME.pack(MAX_FRAME + 1))
    with pytest.raises(ValueError, match="too large"):
        read_request(worker)
    server.sendall(encode_frame({"size": 1})[:-2])
    server.close()
    with pytest.raises(EOFError):
        read_request(worker)


@pytest.mark.parametrize(
    ("program", "records", "served"),
    [
        (".a", 3, True),
        ("[., inputs]", 3, False),
        ("[., inputs]", 1, True),
        ("input_line_number", 1, False),
        ('"input"', 5, False),  # lexical: errs towards the stream
    ],
)
def test_which_programs_cached_values_serve(program: str, records: int, served: bool) -> None:
    assert cache_serves(program, records) is served
