"""Server-sent events as the LLM APIs use them: an incremental parser over the upstream's byte chunks, and the
encoder for the events the gateway writes itself.

The parser keeps each event's exact bytes (`SseEvent.raw`), so an event the gateway does not change is forwarded
byte for byte. Line endings are normalised to LF first (the APIs send LF; CRLF and CR are legal SSE).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(slots=True)
class SseEvent:
    """One event: its `event:` name (None when absent), its joined `data:` lines, and its bytes (with the blank
    line that ends it)."""

    name: str | None
    data: str
    raw: bytes

    def json(self) -> Any:
        """The data as JSON; raises ValueError when it is not JSON (e.g. `[DONE]`)."""
        return orjson.loads(self.data)


class SseParser:
    """Feed byte chunks in arrival order; get back the events they complete. Comments (`: ...`) and empty events
    are returned too (with name None and empty data) so a caller that forwards raw bytes loses nothing."""

    def __init__(self) -> None:
        self._buffer = b""
        self._after_cr = False  # the last chunk ended with CR: a LF opening the next one belongs to it (CRLF)

    def feed(self, chunk: bytes) -> list[SseEvent]:
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._after_cr = chunk.endswith(b"\r")
        if b"\r" in chunk:
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        buffer = self._buffer + chunk
        events: list[SseEvent] = []
        start = 0
        while True:
            end = buffer.find(b"\n\n", start)
            if end < 0:
                break
            events.append(parse_event(buffer[start : end + 2]))
            start = end + 2
        self._buffer = buffer[start:]
        return events

    @property
    def pending(self) -> bytes:
        """Bytes of an event not finished yet (non-empty at the end of a stream means it was cut)."""
        return self._buffer.strip()


def parse_event(raw: bytes) -> SseEvent:
    name: str | None = None
    data: list[str] = []
    for line in raw.decode("utf-8", errors="replace").split("\n"):
        if not line or line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    return SseEvent(name=name, data="\n".join(data), raw=raw)


def encode_event(data: Any, name: str | None = None) -> bytes:
    """One event as bytes: `event: NAME` (when given) and the data as compact JSON on one `data:` line."""
    payload = orjson.dumps(data)
    if name is None:
        return b"data: " + payload + b"\n\n"
    return b"event: " + name.encode() + b"\ndata: " + payload + b"\n\n"


COMMENT_PING = b": keep-alive\n\n"  # an SSE comment: every SSE client ignores it, it keeps idle proxies from closing
