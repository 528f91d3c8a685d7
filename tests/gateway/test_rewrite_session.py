"""Session derivation: header > credential hash + first messages; forks and shared prefixes are one session and
stay consistent; the credential is never stored."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.cachesafe.session import SESSION_HEADER, derive_session
from mcp_offload.core.outputs import SessionScope
from support.gateway_core import APIS, Conversation, big_text, headers_for, open_services, wire

POLICY = RewritePolicy(threshold_tokens=200)


@pytest.mark.parametrize("api", APIS)
def test_same_credential_and_opening_is_one_session_whatever_comes_later(api: ApiName) -> None:
    conv = Conversation(api, seed=1)
    first = derive_session(api_named(api), conv.body(), headers_for(api, "sk-1"))
    for _ in range(3):
        conv.advance()
    assert derive_session(api_named(api), conv.body(), headers_for(api, "sk-1")) == first
    assert derive_session(api_named(api), conv.body(), headers_for(api, "sk-2")) != first  # another credential
    other = Conversation(api, seed=2)  # another first user message
    assert derive_session(api_named(api), other.body(), headers_for(api, "sk-1")) != first
    changed = conv.body()
    if api == "anthropic":
        changed["system"] = "another system prompt"
    elif api == "openai_chat":
        changed["messages"][0] = {"role": "system", "content": "another system prompt"}
    elif api == "gemini":
        changed["systemInstruction"] = {"parts": [{"text": "another system prompt"}]}
    else:
        changed["instructions"] = "another system prompt"
    assert derive_session(api_named(api), changed, headers_for(api, "sk-1")) != first


def test_header_names_the_session_like_mcp_offload_session() -> None:
    body = Conversation("anthropic", seed=1).body()
    named = derive_session(api_named("anthropic"), body, {"X-MCP-Offload-Session": "team-build", "x-api-key": "a"})
    assert (
        named.explicit
        and named.scope == SessionScope.named("team-build")
        and named.key == SessionScope.named("team-build").key
    )
    assert derive_session(api_named("anthropic"), body, {SESSION_HEADER: "team-build", "x-api-key": "b"}) == named
    # invalid names are ignored (derived instead)
    assert not derive_session(api_named("anthropic"), body, {SESSION_HEADER: "\x00bad", "x-api-key": "a"}).explicit
    assert not derive_session(api_named("anthropic"), body, {SESSION_HEADER: "x" * 500, "x-api-key": "a"}).explicit


def test_cache_control_moves_and_sdk_nulls_do_not_change_the_session() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "max_tokens": 5,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
        ],
    }
    moved = copy.deepcopy(body)
    del moved["messages"][0]["content"][0]["cache_control"]
    moved["system"][0]["citations"] = None
    moved["messages"].append({"role": "assistant", "content": "x"})
    plain = {"model": "m", "max_tokens": 5, "system": "sys", "messages": [{"role": "user", "content": "hi"}]}
    keys = {derive_session(api_named("anthropic"), b, {"x-api-key": "k"}).key for b in (body, moved, plain)}
    assert len(keys) == 1


def test_responses_continuations_share_one_session_per_credential_and_instructions() -> None:
    a = {
        "model": "gpt-5",
        "instructions": "be brief",
        "previous_response_id": "resp_1",
        "input": [{"role": "user", "content": "x"}],
    }
    b = {**a, "previous_response_id": "resp_2", "input": [{"role": "user", "content": "y"}]}
    assert derive_session(api_named("responses"), a, {"authorization": "Bearer k"}) == derive_session(
        api_named("responses"), b, {"authorization": "Bearer k"}
    )


@pytest.mark.parametrize("api", APIS)
async def test_forks_share_decisions_and_bytes(tmp_path: Path, api: ApiName) -> None:
    """Two branches forked after turn 5: the shared prefix is byte-identical in both, each branch's own results get
    their own handles, and both are consistent on every later turn."""
    async with open_services(tmp_path / "store") as services:
        trunk = Conversation(api, seed=9, large_every=1)
        for _ in range(5):
            trunk.advance()
        headers = headers_for(api, "fork")
        base = await rewrite_request(services, api_named(api), trunk.body(), headers, POLICY)
        left, right = copy.deepcopy(trunk), copy.deepcopy(trunk)
        right.rng = random.Random(1234)  # the branches diverge
        left.advance()
        right.advance()
        out_left = await rewrite_request(services, api_named(api), left.body(), headers, POLICY)
        out_right = await rewrite_request(services, api_named(api), right.body(), headers, POLICY)
        assert out_left.session == out_right.session == base.session
        key = api_named(api).history.messages_key
        shared = wire(base.body[key])[:-1]
        assert wire(out_left.body[key]).startswith(shared) and wire(out_right.body[key]).startswith(shared)
        assert set(out_left.offloaded).isdisjoint(out_right.offloaded)
        again = await rewrite_request(services, api_named(api), left.body(), headers, POLICY)
        assert wire(again.body) == wire(out_left.body)


async def test_the_credential_is_never_stored(tmp_path: Path) -> None:
    secret = "sk-ant-SECRET-" + "9" * 20
    async with open_services(tmp_path / "store") as services:
        conv = Conversation("anthropic", seed=4, large_every=1)
        conv.messages[-1]["content"] += " " + big_text(random.Random(0), 10, "x")
        conv.advance()
        rewrite = await rewrite_request(services, api_named("anthropic"), conv.body(), {"x-api-key": secret}, POLICY)
        assert rewrite.offloaded
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
