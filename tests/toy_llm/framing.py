"""Toy Cloud's stream framing: each event in a binary frame, `TOY` + a 4-byte big-endian length + the event's SSE
bytes (as AWS event-stream wraps Bedrock's events). The gateway reads the events through `reader()` and writes its
own (spliced, pings, errors) through `frame()`; the Toy Chat dialect never sees a frame."""

from __future__ import annotations

import struct

from mcp_offload.apis.sse import SseEvent, SseParser
from mcp_offload.providers.framing import FrameReader

MAGIC = b"TOY"
_LENGTH = struct.Struct(">I")


def frame_event(event: bytes) -> bytes:
    return MAGIC + _LENGTH.pack(len(event)) + event


def unframe(data: bytes) -> tuple[list[bytes], bytes]:
    """The whole frames' payloads in `data`, and the bytes of a frame not complete yet."""
    payloads: list[bytes] = []
    at = 0
    while len(data) - at >= 7:
        if data[at : at + 3] != MAGIC:
            raise ValueError(f"not a toy frame at byte {at}")
        (size,) = _LENGTH.unpack_from(data, at + 3)
        if len(data) - at - 7 < size:
            break
        payloads.append(data[at + 7 : at + 7 + size])
        at += 7 + size
    return payloads, data[at:]


class _Reader:
    def __init__(self) -> None:
        self._buffer = b""
        self._sse = SseParser()

    def feed(self, chunk: bytes) -> list[SseEvent]:
        payloads, self._buffer = unframe(self._buffer + chunk)
        return [event for payload in payloads for event in self._sse.feed(payload)]

    @property
    def pending(self) -> bytes:
        return self._buffer or self._sse.pending


class ToyFrames:
    media_type = "application/x-toy-frames"
    relays_bytes = False  # a frame cut in half cannot be followed by another: relayed in whole frames

    def reader(self) -> FrameReader:
        return _Reader()

    def frame(self, sse: bytes) -> bytes:
        parser = SseParser()
        events = [e.raw for e in parser.feed(sse) if e.raw.strip()]
        rest = [parser.pending + b"\n\n"] if parser.pending else []
        return b"".join(frame_event(raw) for raw in [*events, *rest])


TOY_FRAMES = ToyFrames()
