"""Bedrock's streams: AWS event-stream frames (`application/vnd.amazon.eventstream`), read as the events an API's
`Dialect` splices and written back as frames.

A frame is total length (4 bytes, big-endian) · headers length (4) · CRC32 of those 8 bytes · headers · payload ·
CRC32 of all before it; the headers name the event (`:event-type`) or, for a failure, `:message-type: exception`
with `:exception-type`. botocore's `EventStreamBuffer` (the SDKs' own decoder) reads the upstream's frames and
checks both CRCs; `encode_frame` writes the gateway's (botocore has no encoder; a frame is the four fields above, and
the clients decode it with that same botocore code, CRCs checked).
(Format: https://docs.aws.amazon.com/transcribe/latest/dg/streaming-setting-up.html#streaming-event-stream)

Two framings, one per operation:

- `INVOKE` (InvokeModelWithResponseStream): each `chunk` frame carries one event of the model's own API, base64 in
  `{"bytes": …}` (Claude: a Messages stream event, `type` naming it). Read as that event, named by its `type`;
  written back as a chunk. An exception frame is read as the Messages `error` event (its `error.type` the exception)
  and the dialect's `error` event is written as an exception frame.
- `CONVERSE` (ConverseStream): one event per frame, named by `:event-type` (`messageStart`, `contentBlockDelta`, …);
  exceptions are events named by their member (`throttlingException`, …), written back as exception frames.

A frame whose CRC does not check, or that is not JSON, ends the reading with an `internalServerException` (the
loop then ends the client's stream with it): the gateway never passes on bytes it could not read.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Callable
from typing import Any

import orjson

from mcp_offload.apis.converse.errors import STREAM_EXCEPTIONS
from mcp_offload.apis.sse import SseEvent, SseParser, encode_event

MEDIA_TYPE = "application/vnd.amazon.eventstream"
_STRING = 7
_EXCEPTIONS = frozenset(STREAM_EXCEPTIONS.values()) | {"modelTimeoutException", "serviceQuotaExceededException"}
CORRUPT = "The upstream sent an event-stream frame that could not be read (bad CRC or not JSON)."


def encode_frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(
        struct.pack(">B", len(name.encode())) + name.encode() + struct.pack(">BH", _STRING, len(value.encode()))
        + value.encode()
        for name, value in headers.items()
    )  # fmt: skip
    prelude = struct.pack(">II", 12 + len(encoded) + len(payload) + 4, len(encoded))
    head = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", binascii.crc32(head))


def event_frame(event_type: str, payload: bytes) -> bytes:
    return encode_frame({":event-type": event_type, ":content-type": "application/json", ":message-type": "event"},
                        payload)  # fmt: skip


def exception_frame(exception_type: str, message: str) -> bytes:
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return encode_frame(headers, orjson.dumps({"message": message}))


def _stream_exception(name: str) -> str:
    return name if name in _EXCEPTIONS else "internalServerException"


class FrameReader:
    """Feed the upstream's bytes; get back the events they complete (see the module docstring)."""

    def __init__(self, as_event: Callable[[dict[str, str], bytes], SseEvent]) -> None:
        from botocore.eventstream import EventStreamBuffer

        self._buffer = EventStreamBuffer()
        self._as_event = as_event
        self._held = 0  # bytes fed and not yet part of a whole frame
        self._broken = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        from botocore.eventstream import ParserError

        if self._broken:
            return []
        self._buffer.add_data(chunk)
        self._held += len(chunk)
        events: list[SseEvent] = []
        try:
            for message in self._buffer:
                frame = message.to_response_dict()
                self._held -= int(message.prelude.total_length)  # type: ignore[attr-defined]
                events.append(self._as_event(frame["headers"], frame["body"]))
        except (ParserError, ValueError, KeyError, TypeError):
            self._broken = True
            events.append(SseEvent("internalServerException", orjson.dumps({"message": CORRUPT}).decode(), b""))
        return events

    @property
    def pending(self) -> bytes:
        return b"\0" if self._held > 0 and not self._broken else b""


def _invoke_event(headers: dict[str, str], body: bytes) -> SseEvent:
    if headers.get(":message-type") == "exception":
        kind = headers.get(":exception-type", "internalServerException")
        message = orjson.loads(body).get("message", "") if body else ""
        data = {"type": "error", "error": {"type": kind, "message": message}}
        return SseEvent("error", orjson.dumps(data).decode(), encode_event(data, "error"))
    inner = base64.b64decode(orjson.loads(body)["bytes"])
    data = orjson.loads(inner)
    name = str(data.get("type")) if isinstance(data, dict) else None
    return SseEvent(name, inner.decode(), encode_event(data, name))


def _converse_event(headers: dict[str, str], body: bytes) -> SseEvent:
    if headers.get(":message-type") == "exception":
        name = headers.get(":exception-type", "internalServerException")
    else:
        name = headers[":event-type"]
    data = orjson.loads(body) if body else {}
    return SseEvent(name, orjson.dumps(data).decode(), encode_event(data, name))


class _Framing:
    media_type = MEDIA_TYPE
    relays_bytes = False

    def __init__(self, as_event: Callable[[dict[str, str], bytes], SseEvent], write: Callable[[SseEvent], bytes]):
        self._as_event = as_event
        self._write = write

    def reader(self) -> FrameReader:
        return FrameReader(self._as_event)

    def frame(self, sse: bytes) -> bytes:
        """The gateway's SSE bytes (spliced events, pings, error events) as frames."""
        parser = SseParser()
        return b"".join(self._write(event) for event in parser.feed(sse + b"\n\n") if event.data)


def _write_invoke(event: SseEvent) -> bytes:
    data: Any = event.json()
    if event.name == "error":
        error = data.get("error") or {}
        return exception_frame(_stream_exception(str(error.get("type", ""))), str(error.get("message", "")))
    return event_frame("chunk", orjson.dumps({"bytes": base64.b64encode(orjson.dumps(data)).decode("ascii")}))


def _write_converse(event: SseEvent) -> bytes:
    name = event.name or ""
    if name.endswith("Exception"):
        return exception_frame(_stream_exception(name), str(event.json().get("message", "")))
    return event_frame(name, event.data.encode())


INVOKE = _Framing(_invoke_event, _write_invoke)
CONVERSE = _Framing(_converse_event, _write_converse)
