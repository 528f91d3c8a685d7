"""Handles that reach another conversation of the same credential: sub-agents and parallel conversations.

A conversation (a gateway session) keeps its outputs in its own store scope. Agents fan out: Claude Code's Task
tool, an orchestrator, a user pasting a handle into a new chat hand a handle to a conversation that did not store
it. Handles are unguessable capabilities (130 bits, `store.handles`), so the rule is:

- **Any conversation of the credential can read a handle that reaches it.** Every handle the gateway stores is
  written to the credential's index (`remember`: the record "session" keyed by the credential's digest, field
  `h:<handle>` -> the owning session's scope key, set-if-absent). A retrieval call whose handle is not in the
  caller's own scope is run in the owner's scope, non-enumerable (`reach`).
- **The retrieval tools come with the handle.** A request of a session without the tools that mentions a handle of
  the credential's index (anywhere in the request: a sub-agent's prompt, a pasted line) turns them on for that
  session, recorded and sticky like the first offload (`mentions_known_handle`): the same fixed tool bytes from
  that request on.
- **Another credential reads nothing:** its index does not hold the handle, so the call runs in its own scope and
  gets exactly the answer of an unknown handle.
- `list_outputs` and a search without a handle stay per conversation (they never consult the index).

Cost: one record write on turns that store outputs, and on requests of sessions without the tools a scan of the
request for handles (a regex over its JSON) and, only when one is found, one record read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.core.outputs import SessionScope
from mcp_offload.core.services import Services
from mcp_offload.errors import OffloadError, UnknownHandle
from mcp_offload.store.handles import handles_in, scope_key, validate_handle

__all__ = ["mentions_known_handle", "reach", "remember"]

FIELD = "h:"
MAX_MENTIONS = 32  # handles looked up per request (a request quoting hundreds of handles is checked on these)


def _index_key(session: CacheSafeSession) -> str | None:
    return scope_key(f"gateway-credential:{session.credential}") if session.credential else None


async def remember(services: Services, session: CacheSafeSession, handles: Sequence[str]) -> None:
    """Add `handles`, just stored by `session`, to its credential's index (set-if-absent: the first owner wins, and
    derived handles of one session's content are that session's on every instance). Raises the store's errors."""
    key = _index_key(session)
    if key is None or not handles:
        return
    await open_record(services).backend.put_if_absent(key, {FIELD + h: session.key for h in handles})


async def reach(services: Services, session: CacheSafeSession, arguments: Mapping[str, Any]) -> SessionScope:
    """The scope a retrieval call with `arguments` runs in: the session's own, unless its handle is not there and
    the credential's index names another owner (then that owner's, non-enumerable)."""
    key = _index_key(session)
    raw = arguments.get("handle")
    if key is None or raw is None:
        return session.scope
    try:
        handle = validate_handle(raw)
        await services.store.meta(session.scope.key, handle)
        return session.scope
    except UnknownHandle:
        pass
    except OffloadError:  # malformed, expired, a failing store: the tool's own answer says so
        return session.scope
    try:
        owner = (await open_record(services).backend.get(key, [FIELD + handle])).get(FIELD + handle)
    except OffloadError:
        return session.scope
    if owner is None or owner == session.scope.key:
        return session.scope
    return SessionScope(owner, enumerable=False)


async def mentions_known_handle(services: Services, session: CacheSafeSession, body: Mapping[str, Any]) -> bool:
    """Whether the request `body` mentions a handle in the credential's index. Raises the store's errors."""
    key = _index_key(session)
    if key is None:
        return False
    try:
        text = orjson.dumps(body).decode("utf-8", "replace")
    except orjson.JSONEncodeError:  # an integer orjson cannot write: the request holds no handle it could read
        return False
    if "out_" not in text:
        return False
    found = handles_in(text, MAX_MENTIONS)
    if not found:
        return False
    return bool(await open_record(services).backend.get(key, [FIELD + h for h in found]))
