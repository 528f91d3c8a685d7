"""What the gateway remembers per session, and the small backend interface both stores implement.

A session's record is a map of fields to JSON texts, written by set-if-absent (so a field, once set, never changes:
that is what makes decisions sticky across turns, restarts and instances), plus integer counters. The one exception
is `x:`, written by `put_latest` (the value of the latest order wins: a retried request's exchange replaces the
earlier attempt's, see record/__init__.py):

    d:<digest>   a tool result part's decision: offloaded as a handle, with the exact replacement text
                 or "kept inline" (empty handle: its reference would not be smaller); absent: inline for now
                 (see rewrite.py for when an absent part may still be offloaded)
    h:<handle>   the digest of the decision that stored the handle (which tool call produced an output, for
                 the message of an expired handle)
    x:<digest>   an expansion: the upstream-true messages standing for a client's copy of a model response, the
                 one of the latest request (by arrival) that produced that copy
    t:<digest>   the `Compactor`'s transcript step: the note standing for older turns with that digest (their
                 position and content), so a later call puts back the very same note
    tools        "the retrieval tools are on" (from the request that offloaded the session's first output)
    expanded     the session has expansions (saves the expansion lookup for sessions that have none)
    bypass       rewriting is off for this session (the upstream refused a rewritten request); the reason

Backends: `fs.py` (one append-only JSON-lines log per session beside the store, first value wins, writes under an
exclusive flock) and `redis.py` (one hash per session, HSETNX in a Lua script). Both keep counters apart from fields.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

DAY_S = 24 * 3600.0
RECORD_TTL_S = 30 * DAY_S  # a session's record lives this long after its last use


class RecordBackend(Protocol):
    async def get(self, session: str, fields: Sequence[str]) -> dict[str, str]:
        """The values of those `fields` that are set (absent ones are left out)."""
        ...

    async def put_if_absent(self, session: str, items: Mapping[str, str]) -> dict[str, str]:
        """Set each field that is not set yet, atomically per field; the value each field holds afterwards
        (the caller's, or the one another writer set first)."""
        ...

    async def put_latest(self, session: str, items: Mapping[str, tuple[int, str]]) -> None:
        """Set each field to its value unless the field holds a value of the same or a later order (an integer);
        a field set by `put_if_absent` counts as the earliest. Atomic per field: any number of writers, in any
        order, leave every field with the value of its highest order (of equal orders, the first written)."""
        ...

    async def add(self, session: str, counts: Mapping[str, int]) -> None:
        """Add to the session's counters (atomic increments: several instances add up)."""
        ...

    async def counters(self, session: str) -> dict[str, int]: ...

    async def sessions(self) -> list[tuple[str, float]]:
        """Every session with a record, and when it was last written (unix seconds), most recent first."""
        ...

    async def aclose(self) -> None: ...
