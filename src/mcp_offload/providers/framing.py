"""How a provider frames a streamed answer, apart from what the events mean (the API's `Dialect`).

A `Framing` reads the upstream's bytes as events (`reader()`: feed chunks, get `SseEvent`s; the event's `raw` bytes
are what is forwarded unchanged) and frames the events the gateway writes itself (`frame`: the SSE bytes a
`Dialect` produced, in this framing). The public APIs stream SSE (`SSE`, the identity); a cloud that frames
otherwise (AWS event-stream on Bedrock) writes a `Framing` of its own in its package.
"""

from __future__ import annotations

from typing import Protocol

from mcp_offload.apis.sse import SseEvent, SseParser


class FrameReader(Protocol):
    def feed(self, chunk: bytes) -> list[SseEvent]:
        """The events the chunk completes, in order."""
        ...

    @property
    def pending(self) -> bytes:
        """Bytes of an event not finished yet (non-empty at the end of a stream: it was cut)."""
        ...


class Framing(Protocol):
    media_type: str  # the stream's content type ("text/event-stream")
    # a stream relayed unspliced may go on byte for byte (SSE: a cut event is ended by the error event); False: only
    # whole events are forwarded, re-framed (an event-stream frame cut in half cannot be followed by another)
    relays_bytes: bool

    def reader(self) -> FrameReader: ...

    def frame(self, sse: bytes) -> bytes:
        """The gateway's own SSE bytes (spliced events, error events, pings) in this framing."""
        ...


class SseFraming:
    media_type = "text/event-stream"
    relays_bytes = True

    def reader(self) -> FrameReader:
        return SseParser()

    def frame(self, sse: bytes) -> bytes:
        return sse


SSE: Framing = SseFraming()
