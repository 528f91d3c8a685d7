"""The scoping rule (`mcp_offload.mcp_server.scoping`) and `outputs.SessionScope`: which store scope a request
belongs to.

Over real HTTP the rules are tested end to end in serve/http/test_scoping.py (clients apart, one principal's rule,
the anonymous scope, stateless HTTP). Here: `SessionScope.named` / `SessionScope.new`, the run scope of stdio and
in-memory servers through the real server in both eras, and each `ConnectionScope` branch on light stand-ins for the
request context (what it reads of one: the protocol version, the connection's session id and state, the principal),
which a real `ServerRequestContext` only offers inside a running HTTP session.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any, cast

import pytest
from mcp import Client

from mcp_offload.core import outputs
from mcp_offload.core.services import Services
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.scoping import ANONYMOUS, MODERN_PROTOCOL, ConnectionScope, RunScope, new_scope
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.store.handles import scope_key, validate_scope
from support import ERAS

KEY = re.compile(r"[0-9a-f]{32}")


def test_named_scopes_are_stable_and_distinct_per_name() -> None:
    assert outputs.SessionScope.named("agent-7") == outputs.SessionScope.named("agent-7")
    assert outputs.SessionScope.named("agent-7").key == scope_key("session-name:agent-7")
    names = ["agent-7", "agent-8", "Agent-7", "agent-7 ", "é", "x" * 200]
    assert len({outputs.SessionScope.named(n).key for n in names}) == len(names)
    assert all(
        KEY.fullmatch(outputs.SessionScope.named(n).key) and outputs.SessionScope.named(n).enumerable for n in names
    )
    assert "agent-7" not in outputs.SessionScope.named("agent-7").key  # the store sees a hash, never the name


def test_new_scopes_are_unique() -> None:
    keys = {outputs.SessionScope.new().key for _ in range(200)} | {new_scope() for _ in range(200)}
    assert len(keys) == 400
    assert all(validate_scope(k) == k for k in keys)
    assert outputs.SessionScope.new().enumerable is True


def test_the_anonymous_scope_cannot_enumerate() -> None:
    assert (ANONYMOUS.key, ANONYMOUS.enumerable) == (scope_key("anonymous-capabilities"), False)


def test_run_scope_is_the_runs_whatever_the_request() -> None:
    run = new_scope()
    policy = RunScope()
    for ctx in (_ctx(MODERN_PROTOCOL, None), _ctx("2025-11-25", "sid-1"), _ctx("2025-11-25", None)):
        assert policy(ctx, run) == outputs.SessionScope(run)


@pytest.mark.parametrize("mode", ERAS)
async def test_an_in_memory_server_stores_into_its_run_scope(services: Services, mode: str) -> None:
    """A server started with `session=NAME` (mcp-offload --session NAME) stores into that named scope, in both eras;
    without one, into a private run scope no name reaches."""
    async with Client(build_server(services, session="agent-7"), mode=mode) as client:
        first = result_of(await client.call_tool("offload", {"content": "one\n" * 10}))["handle"]
        second = result_of(await client.call_tool("offload", {"content": "two\n" * 10}))["handle"]
    listed = await outputs.list_outputs(services, outputs.SessionScope.named("agent-7"))
    assert {o.handle for o in listed.outputs} == {first, second}  # both requests: one scope
    async with Client(build_server(services), mode=mode) as client:
        private = result_of(await client.call_tool("offload", {"content": "three\n" * 10}))["handle"]
        mine = result_of(await client.call_tool("list_outputs", {}))["outputs"]
    assert [o["handle"] for o in mine] == [private]
    listed = await outputs.list_outputs(services, outputs.SessionScope.named("agent-7"))
    assert private not in {o.handle for o in listed.outputs}


# -- ConnectionScope ------------------------------------------------------------------------------------------------
def _ctx(protocol: str, session_id: str | None, state: dict[str, Any] | None = None, who: str | None = None) -> Any:
    """What ConnectionScope reads of a request context; `who` is what the principal function will answer."""
    connection = SimpleNamespace(session_id=session_id, state={} if state is None else state)
    return SimpleNamespace(protocol_version=protocol, session=SimpleNamespace(_connection=connection), who=who)


POLICY = ConnectionScope(principal=lambda ctx: cast(Any, ctx).who)  # a stand-in context (see `_ctx`)


@pytest.mark.parametrize("session_id", [None, "sid-1"])
def test_2026_requests_get_the_principals_scope(session_id: str | None) -> None:
    run = new_scope()
    scope = POLICY(_ctx(MODERN_PROTOCOL, session_id, who="alice"), run)
    assert scope == outputs.SessionScope(scope_key("principal:alice")) and scope.enumerable
    assert POLICY(_ctx(MODERN_PROTOCOL, session_id, who="alice"), new_scope()) == scope  # same principal, same scope
    assert POLICY(_ctx(MODERN_PROTOCOL, session_id, who="bob"), run) != scope
    assert scope.key != run and "alice" not in scope.key


@pytest.mark.parametrize("protocol", [MODERN_PROTOCOL, "2025-11-25"])
def test_requests_without_identity_share_the_anonymous_scope(protocol: str) -> None:
    """2026-07-28 without a token; stateless HTTP (no session id) without a token."""
    state: dict[str, Any] = {}
    assert POLICY(_ctx(protocol, None, state), new_scope()) is ANONYMOUS
    assert state == {}  # nothing kept: there is no connection to keep it on


def test_stateless_handshake_requests_follow_the_principal() -> None:
    a = POLICY(_ctx("2025-11-25", None, who="alice"), new_scope())
    b = POLICY(_ctx("2025-11-25", None, who="alice"), new_scope())  # another request, another connection
    assert a == b == outputs.SessionScope(scope_key("principal:alice"))


@pytest.mark.parametrize("who", [None, "alice"])
def test_a_handshake_session_gets_its_own_scope_kept_on_the_connection(who: str | None) -> None:
    state: dict[str, Any] = {}
    first = POLICY(_ctx("2025-11-25", "sid-1", state, who), new_scope())
    again = POLICY(_ctx("2025-11-25", "sid-1", state, who), new_scope())  # the next request on that connection
    other = POLICY(_ctx("2025-11-25", "sid-2", {}, who), new_scope())  # another session, same principal
    assert first == again and first != other
    assert first.enumerable and KEY.fullmatch(first.key)
    assert first not in (ANONYMOUS, outputs.SessionScope(scope_key("principal:alice")))
    assert list(state.values()) == [first.key]  # kept in the connection's state, as a hashed key


def test_the_principal_is_asked_only_when_needed() -> None:
    asked: list[str] = []

    def principal(ctx: Any) -> str | None:
        asked.append(ctx.session._connection.session_id or "-")
        return "alice"

    policy = ConnectionScope(principal=principal)
    state: dict[str, Any] = {}
    for _ in range(3):
        policy(_ctx("2025-11-25", "sid-1", state), new_scope())
    assert asked == ["sid-1"]  # once per handshake session: the scope is kept afterwards
