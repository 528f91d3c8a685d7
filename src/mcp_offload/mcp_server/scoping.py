"""The session-scoping rule: which store scope a request belongs to.

- stdio and in-memory: one server run is one client, so one scope per run (a random id made when the run starts),
  in both protocol eras. Two stdio processes sharing a store directory never see each other's outputs.
- HTTP, handshake era (2025-11-25 and older): one scope per MCP session (per connection), a random id kept in the
  connection's state; it ends with the session.
- HTTP, 2026-07-28 era (requests carry no session): the authenticated principal (bearer token identity) is the scope.
  Without authentication there is no identity at all: such requests share one anonymous scope in which only
  handle-addressed calls work (a handle is an unguessable capability: 130 random bits), while `list_outputs`,
  search without a handle and resource listing are refused, so nobody can enumerate anyone else's outputs.
- Stateless streamable HTTP (`--stateless`), handshake era: every request is a fresh connection with no session id,
  so "per connection" would be a new scope per request (an output could never be read back). Such requests follow
  the 2026-07-28 rule: the principal's scope, or the anonymous one.

Scope ids are hashed (`scope_key`) before they reach a store, so a store never sees a token or a session id.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mcp.server import ServerRequestContext

from mcp_offload.core.outputs import SessionScope
from mcp_offload.store.handles import scope_key

MODERN_PROTOCOL = "2026-07-28"
_STATE_KEY = "mcp_offload.mcp_server.scoping"


def connection_of(ctx: ServerRequestContext[Any]) -> Any:
    """The per-client `Connection` behind a request: its session id, its per-connection `state` dict and its
    `exit_stack`. The MCP SDK (2.3) has no public accessor, so this is the one place that reads the private
    attribute: an SDK that adds one (or renames it) changes this line only."""
    return ctx.session._connection


def new_scope() -> str:
    return SessionScope.new().key


ANONYMOUS = SessionScope(scope_key("anonymous-capabilities"), enumerable=False)


@dataclass(frozen=True, slots=True)
class RunScope:
    """One scope per server run: stdio (one process per client) and in-memory clients."""

    def __call__(self, ctx: ServerRequestContext[Any], run_scope: str) -> SessionScope:
        return SessionScope(run_scope)


@dataclass(frozen=True, slots=True)
class ConnectionScope:
    """HTTP: one scope per handshake-era session (a connection with a session id: stateful streamable HTTP, SSE);
    the principal's scope, or the anonymous non-enumerable one, for 2026-07-28 and stateless requests."""

    principal: Callable[[ServerRequestContext[Any]], str | None]

    def __call__(self, ctx: ServerRequestContext[Any], run_scope: str) -> SessionScope:
        connection = connection_of(ctx)
        if ctx.protocol_version == MODERN_PROTOCOL or connection.session_id is None:
            who = self.principal(ctx)
            return SessionScope(scope_key("principal:" + who)) if who else ANONYMOUS
        state = connection.state  # per-connection scratch dict, lives as long as the session
        scope = state.get(_STATE_KEY)
        if scope is None:
            who = self.principal(ctx)
            scope = scope_key(f"session:{who or ''}:{secrets.token_hex(16)}")
            state[_STATE_KEY] = scope
        return SessionScope(scope)


ScopePolicy = Callable[[ServerRequestContext[Any], str], SessionScope]
