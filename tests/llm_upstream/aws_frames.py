"""AWS event-stream frames as Bedrock sends them (`application/vnd.amazon.eventstream`).

One frame: total length (4 bytes, big-endian) · headers length (4) · CRC32 of those 8 bytes (4) · headers · payload ·
CRC32 of everything before it (4). A header is its name (1-byte length + UTF-8), a type byte and the value; Bedrock
uses strings only (type 7: 2-byte length + UTF-8). Every frame carries `:event-type` (the member of the stream's
union: `chunk`, `messageStart`, …) or, for a failure, `:message-type: exception` with `:exception-type`
(`throttlingException`, `modelStreamErrorException`, …), and `:content-type: application/json`.

Bedrock pads each event's JSON with a `"p"` field of random length (letters and digits) so that the frame sizes do not
reveal the token lengths; clients ignore it. The client side of these frames is botocore's `EventStreamBuffer` (the
SDKs' own decoder, which checks both CRCs), so a frame this module got wrong fails there.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import string
import struct
from typing import Any

STRING = 7
_PAD = string.ascii_letters + string.digits
_rng = random.Random(7)


def frame(headers: dict[str, str], payload: bytes) -> bytes:
    encoded = b"".join(_header(name, value) for name, value in headers.items())
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    head = prelude + struct.pack(">I", binascii.crc32(prelude)) + encoded + payload
    return head + struct.pack(">I", binascii.crc32(head))


def _header(name: str, value: str) -> bytes:
    key, raw = name.encode(), value.encode()
    return struct.pack(">B", len(key)) + key + struct.pack(">BH", STRING, len(raw)) + raw


def padded(data: dict[str, Any]) -> bytes:
    return json.dumps({**data, "p": "".join(_rng.choice(_PAD) for _ in range(_rng.randint(1, 24)))}).encode()


def event(event_type: str, data: dict[str, Any]) -> bytes:
    """An event frame (Converse streams: `messageStart`, `contentBlockDelta`, …) with padded JSON."""
    headers = {":event-type": event_type, ":content-type": "application/json", ":message-type": "event"}
    return frame(headers, padded(data))


def chunk(data: dict[str, Any]) -> bytes:
    """An InvokeModelWithResponseStream `chunk`: the model's own event, base64 in `bytes`."""
    inner = json.dumps(data, ensure_ascii=False).encode()
    return event("chunk", {"bytes": base64.b64encode(inner).decode("ascii")})


def exception(exception_type: str, message: str) -> bytes:
    """A failure inside the stream (`:message-type: exception`), as Bedrock ends a stream it cannot finish."""
    headers = {":exception-type": exception_type, ":content-type": "application/json", ":message-type": "exception"}
    return frame(headers, json.dumps({"message": message}).encode())
