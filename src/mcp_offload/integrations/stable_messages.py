"""Hand the `Compactor` the same message object for the same content, turn after turn.

Frameworks rebuild their message dicts before every model call, so the compactor's identity ledger would see every
big tool result as new and store it again under a new handle each turn. `StableMessages.canonical` maps each
message to the first object seen with the same content (a digest of its JSON bytes), so a result is stored once,
gets one handle, and its replacement bytes stay the same in every later request (the cached prefix holds).
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import orjson

SIZE = 20_000  # the compactor ledger's size: a message forgotten here is forgotten there too


def _digest(message: object) -> bytes:
    data = orjson.dumps(message, option=orjson.OPT_SORT_KEYS, default=repr)
    return hashlib.blake2b(data, digest_size=16).digest()


class StableMessages:
    """Per conversation: content digest -> the first message object seen with that content."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._seen: OrderedDict[bytes, Any] = OrderedDict()

    def canonical(self, messages: Sequence[Any]) -> list[Any]:
        out = []
        for message in messages:
            key = _digest(message)
            found = self._seen.get(key)
            if found is None:
                self._seen[key] = found = message
                while len(self._seen) > self.size:
                    self._seen.popitem(last=False)
            else:
                self._seen.move_to_end(key)
            out.append(found)
        return out
