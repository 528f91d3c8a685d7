"""rewrite_request basics on the three APIs: what is offloaded, what is never touched, tools, fail-open."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import ClearToolUses, RewritePolicy
from mcp_offload.cachesafe.record import open_record
from mcp_offload.cachesafe.request_rewrite import RewriteUnavailable, rewrite_request
from mcp_offload.cachesafe.tool_text import RETRIEVAL_TOOL_NAMES, retrieval_tools
from mcp_offload.core import outputs as core
from mcp_offload.core.services import Services
from support.gateway_core import (
    APIS,
    Conversation,
    big_text,
    client_tools,
    headers_for,
    make_body,
    model_turn,
    open_services,
    results_turn,
    user_text,
    validate_body,
    wire,
)

POLICY = RewritePolicy(threshold_tokens=200, clear_tool_uses=None, cost_rule=False)
RNG = random.Random(7)
LARGE = big_text(RNG, 800, "large")
SMALL = "exit 0: 3 tests passed"


def _tool_names(api: ApiName, tools: list[dict[str, Any]]) -> list[str]:
    if api == "gemini":
        return [
            n
            for t in tools
            for n in ([d["name"] for d in t["functionDeclarations"]] if "functionDeclarations" in t else list(t))
        ]
    return [t["function"]["name"] if "function" in t else t["name"] for t in tools]


def conversation(api: ApiName, results: list[tuple[str, str]], *, user: str | None = None) -> list[dict[str, Any]]:
    calls = [(cid, "bash", {"cmd": cid}) for cid, _ in results]
    return [user_text(api, "Please look."), *model_turn(api, calls, "Looking.", 1), *results_turn(api, results, user)]


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    async with open_services(tmp_path / "store") as services:
        yield services


@pytest.mark.parametrize("api", APIS)
async def test_a_session_that_never_offloads_gets_its_body_object_back(services: Services, api: ApiName) -> None:
    body = make_body(api, "sys", conversation(api, [("c1", SMALL)]), client_tools(api))
    before = copy.deepcopy(body)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k1"), POLICY)
    assert rewrite.body is body and not rewrite.changed and not rewrite.tools_injected
    assert rewrite.fail_open is None and rewrite.offloaded == [] and body == before


@pytest.mark.parametrize("api", APIS)
async def test_a_large_new_result_becomes_the_mcp_reference_and_the_tools_are_appended(
    services: Services, api: ApiName
) -> None:
    body = make_body(api, "sys", conversation(api, [("c1", LARGE), ("c2", SMALL)]), client_tools(api))
    validate_body(api, body)
    before = copy.deepcopy(body)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k2"), POLICY)
    assert rewrite.changed and len(rewrite.offloaded) == 1 and rewrite.tools_injected
    assert body == before  # the caller's body is not mutated
    validate_body(api, rewrite.body)
    text = wire(rewrite.body)
    assert LARGE not in text and SMALL in text and rewrite.offloaded[0] in text
    handle = rewrite.offloaded[0]
    read = await core.read(services, rewrite.session.scope, handle)
    assert read.text == LARGE[: len(read.text)] and read.total == len(LARGE)
    names = _tool_names(api, rewrite.body["tools"])
    assert names[: len(client_tools(api))] == _tool_names(api, client_tools(api))
    assert set(names[len(client_tools(api)) :]) == RETRIEVAL_TOOL_NAMES
    assert rewrite.body["tools"][len(client_tools(api)) :] == retrieval_tools(api_named(api))
    assert rewrite.tokens_kept_out > 500 and rewrite.tokens_offloaded > rewrite.tokens_kept_out


@pytest.mark.parametrize("api", APIS)
async def test_the_same_request_twice_gives_the_same_bytes_and_handle(services: Services, api: ApiName) -> None:
    body = make_body(api, "sys", conversation(api, [("c1", LARGE)]), client_tools(api))
    first = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "k3"), POLICY)
    second = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "k3"), POLICY)
    assert wire(first.body) == wire(second.body)
    assert second.offloaded == [] and first.offloaded  # decided once, then read from the record


@pytest.mark.parametrize("api", APIS)
async def test_visible_mode_offloads_but_injects_no_tools(services: Services, api: ApiName) -> None:
    body = make_body(api, "sys", conversation(api, [("c1", LARGE)]), client_tools(api))
    policy = RewritePolicy(threshold_tokens=200, retrieval="visible", clear_tool_uses=None, cost_rule=False)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k4"), policy)
    assert rewrite.changed and rewrite.offloaded and not rewrite.tools_injected
    assert rewrite.body["tools"] == client_tools(api)


@pytest.mark.parametrize("api", APIS)
async def test_results_already_in_the_prefix_stay_inline(services: Services, api: ApiName) -> None:
    """A large result the gateway never decided on (sent before, e.g. while the store was down) is prefix: it stays
    inline, because the provider has cached it that way."""
    messages = conversation(api, [("c1", LARGE)]) + model_turn(api, [("c2", "bash", {})], "More.", 2)
    messages += results_turn(api, [("c2", SMALL)])
    body = make_body(api, "sys", messages, client_tools(api))
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k5"), POLICY)
    assert rewrite.body is body and not rewrite.changed


@pytest.mark.parametrize("api", APIS)
async def test_results_of_the_retrieval_tools_are_never_offloaded(services: Services, api: ApiName) -> None:
    for name in ("read_large_output", "mcp__offload__search_large_output"):
        calls = [("r1", name, {"handle": "out_" + "a" * 26})]
        messages = [user_text(api, "q"), *model_turn(api, calls, "Reading.", 1), *results_turn(api, [("r1", LARGE)])]
        body = make_body(api, "sys", messages, client_tools(api))
        rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k6" + name), POLICY)
        assert rewrite.body is body, name


async def test_anthropic_never_touches_system_user_text_thinking_and_server_tools(
    services: Services,
) -> None:
    api: ApiName = "anthropic"
    server_blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
        {
            "type": "web_search_tool_result",
            "tool_use_id": "srvtoolu_1",
            "content": [
                {
                    "type": "web_search_result",
                    "url": "https://e.x",
                    "title": LARGE[:3000],
                    "encrypted_content": "E" * 4000,
                }
            ],
        },
    ]
    thinking = {"type": "thinking", "thinking": LARGE, "signature": "S" * 60}
    redacted = {"type": "redacted_thinking", "data": "R" * 5000}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": LARGE}]},  # a huge first user paste
        {
            "role": "assistant",
            "content": [
                thinking,
                redacted,
                *server_blocks,
                {"type": "text", "text": "ok"},
                {"type": "tool_use", "id": "c1", "name": "bash", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": [{"type": "text", "text": LARGE}]},
                {"type": "text", "text": "and now " + LARGE},
            ],
        },
    ]
    body = make_body(api, LARGE, messages, client_tools(api))
    validate_body(api, body)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k7"), POLICY)
    validate_body(api, rewrite.body)
    out = rewrite.body["messages"]
    assert rewrite.body["system"] is body["system"]
    assert out[0] is messages[0] and out[1] is messages[1]  # same objects: same bytes
    assert out[2]["content"][1] is messages[2]["content"][1]  # the last user turn's own text
    assert out[2]["content"][0]["content"][0]["text"].startswith("Stored as out_")
    assert wire(rewrite.body).count(wire(LARGE)[1:-1]) == 4  # system, first paste, thinking, last user text


async def test_anthropic_beta_compaction_blocks_are_never_touched(services: Services) -> None:
    api: ApiName = "anthropic"
    compaction = {"type": "compaction", "content": "Summary: " + LARGE, "encrypted_content": "C" * 3000}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "start"},
        {"role": "assistant", "content": [compaction, {"type": "tool_use", "id": "c1", "name": "bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": LARGE}]},
    ]
    body = {**make_body(api, "sys", messages, client_tools(api)), "betas": ["compact-2026-01-12"]}
    validate_body("anthropic_beta", body)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k7b"), POLICY)
    validate_body("anthropic_beta", rewrite.body)
    assert rewrite.body["messages"][1] is messages[1] and rewrite.body["betas"] is body["betas"]
    assert rewrite.body["messages"][2]["content"][0]["content"].startswith("Stored as out_")


async def test_responses_never_touches_reasoning_compaction_and_builtin_calls(services: Services) -> None:
    api: ApiName = "responses"
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": LARGE},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": LARGE},
    ]
    body = make_body(api, "sys", items, client_tools(api))
    validate_body(api, body)
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k8"), POLICY)
    validate_body(api, rewrite.body)
    out = rewrite.body["input"]
    assert all(out[i] is items[i] for i in range(4))
    assert out[4]["output"].startswith("Stored as out_")


async def test_chat_custom_roles_untouched(services: Services) -> None:
    api: ApiName = "openai_chat"
    messages = [{"role": "developer", "content": LARGE}, *conversation(api, [("c1", LARGE)])]
    body = {"model": "gpt-4o", "messages": messages}
    rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k9"), POLICY)
    validate_body(api, rewrite.body)
    assert rewrite.body["messages"][0] is messages[0]
    assert rewrite.body["messages"][-1]["content"].startswith("Stored as out_")
    assert _tool_names(api, rewrite.body["tools"]) == sorted(RETRIEVAL_TOOL_NAMES, key=_order(api))


def _order(api: ApiName) -> Any:
    names = _tool_names(api, retrieval_tools(api_named(api)))
    return names.index


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize(
    "body",
    [
        {"model": "m"},
        {"model": "m", "messages": "not a list", "input": 5},
        {"model": "m", "messages": [{"role": "wizard", "content": 1}], "input": [{"role": "wizard", "content": 1}]},
        {"model": "m", "messages": [None], "input": [None]},
    ],
)
async def test_bodies_the_gateway_cannot_read_are_forwarded_as_they_are(
    services: Services, api: ApiName, body: dict[str, Any]
) -> None:
    rewrite = await rewrite_request(services, api_named(api), body, {}, POLICY)
    assert rewrite.body is body and not rewrite.changed and rewrite.fail_open is None


async def test_a_string_responses_input_is_forwarded_as_is(services: Services) -> None:
    body = {"model": "gpt-5", "input": LARGE}
    rewrite = await rewrite_request(services, api_named("responses"), body, {}, POLICY)
    assert rewrite.body is body


@pytest.mark.parametrize("api", APIS)
async def test_bypassed_sessions_are_forwarded_unmodified(services: Services, api: ApiName) -> None:
    body = make_body(api, "sys", conversation(api, [("c1", LARGE)]), client_tools(api))
    headers = headers_for(api, "k10")
    first = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers, POLICY)
    assert first.changed
    await open_record(services).mark_bypass(first.session, "upstream refused a rewritten request (400)")
    again = await rewrite_request(services, api_named(api), body, headers, POLICY)
    assert again.body is body and not again.changed


@pytest.mark.parametrize("api", APIS)
async def test_store_down_fails_open_or_closed(tmp_path: Path, api: ApiName) -> None:
    (tmp_path / "file").write_text("x")
    blocked = tmp_path / "file" / "store"  # cannot be created: a path under a regular file
    body = make_body(api, "sys", conversation(api, [("c1", LARGE)]), client_tools(api))
    async with open_services(tmp_path / "ok") as services:
        services.settings = services.settings.with_overrides(store=str(blocked))  # the record opens there
        rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "k11"), POLICY)
        assert rewrite.body is body and not rewrite.changed
        assert rewrite.fail_open is not None and "store" in rewrite.fail_open
        with pytest.raises(RewriteUnavailable) as raised:
            closed = RewritePolicy(threshold_tokens=200, clear_tool_uses=None, cost_rule=False, fail_closed=True)
            await rewrite_request(services, api_named(api), body, headers_for(api, "k11"), closed)
        assert "store" in raised.value.reason


def test_policy_defaults_are_the_documented_ones() -> None:
    policy = RewritePolicy()
    assert policy.threshold_tokens == 1_000 and policy.retrieval == "transparent" and policy.cost_rule
    assert policy.clear_tool_uses == ClearToolUses(100_000, 3, 20_000, ())


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("api", APIS)
def test_the_injected_tools_are_the_committed_bytes_and_a_fresh_copy_each_time(api: ApiName) -> None:
    """The bytes the gateway sends for the retrieval tools are golden/tools_<api>.json's, key order included (the
    golden-bytes test compares values), and a caller that mutates its copy cannot change the next request's."""
    committed = json.loads((GOLDEN / f"tools_{api}.json").read_text(encoding="utf-8"))
    first = retrieval_tools(api_named(api))
    assert wire(first) == wire(committed)
    first[0]["name"] = "changed"
    first.append({"name": "extra"})
    assert wire(retrieval_tools(api_named(api))) == wire(committed)


def test_conversation_builder_is_valid_for_every_api() -> None:
    for api in APIS:
        conv = Conversation(api, seed=3)
        for _ in range(5):
            conv.advance()
        validate_body(api, conv.body())


@pytest.mark.parametrize("api", APIS)
async def test_rewrite_messages_is_the_message_level_core_the_compactor_can_call(
    services: Services, api: ApiName
) -> None:
    from mcp_offload.cachesafe.rewrite import rewrite_messages
    from mcp_offload.cachesafe.session import CacheSafeSession

    session = CacheSafeSession.of_key("ab" * 16)
    messages = conversation(api, [("c1", LARGE)])
    before = copy.deepcopy(messages)
    done = await rewrite_messages(services, api_named(api), session, messages, POLICY)
    assert done.changed and done.tools_on and len(done.offloaded) == 1 and messages == before
    assert wire(done.messages).count("Stored as out_") == 1
    again = await rewrite_messages(services, api_named(api), session, copy.deepcopy(messages), POLICY)
    assert wire(again.messages) == wire(done.messages) and again.offloaded == []
    small = conversation(api, [("c2", SMALL)])
    untouched = await rewrite_messages(services, api_named(api), CacheSafeSession.of_key("cd" * 16), small, POLICY)
    assert untouched.messages is small and not untouched.changed and not untouched.tools_on
    odd = [user_text(api, "x"), {"role": "wizard"}, *conversation(api, [("c3", LARGE + "?")])[1:]]
    kept = await rewrite_messages(
        services, api_named(api), session, odd, POLICY
    )  # a message it cannot read: kept, skipped
    assert kept.messages[1] is odd[1] and wire(kept.messages).count("Stored as out_") == 1


@pytest.mark.parametrize("api", APIS)
async def test_a_store_refusing_the_outputs_fails_open_with_nothing_recorded(tmp_path: Path, api: ApiName) -> None:
    """Two large results stored concurrently, both refused (over the session quota): one clear fail-open reason,
    the original body, and no decision recorded (the next turn sends them inline, as this one did)."""
    body = make_body(api, "sys", conversation(api, [("c1", LARGE), ("c2", LARGE + "!")]), client_tools(api))
    async with open_services(tmp_path / "store", store_session_max_bytes=1_000) as services:
        rewrite = await rewrite_request(services, api_named(api), body, headers_for(api, "full"), POLICY)
        assert rewrite.body is body and not rewrite.changed
        assert rewrite.fail_open is not None and "StoreFull" in rewrite.fail_open
        state = await open_record(services).state(rewrite.session, [])
        assert not state.tools


@pytest.mark.parametrize("api", APIS)
async def test_a_result_whose_reference_would_not_be_smaller_stays_inline_for_good(
    services: Services, api: ApiName
) -> None:
    result = big_text(random.Random(5), 80, "short")  # over a 50-token threshold, but its preview is all of it
    body = make_body(api, "sys", conversation(api, [("c1", result)]), client_tools(api))
    policy = RewritePolicy(threshold_tokens=50, clear_tool_uses=None, cost_rule=False)
    first = await rewrite_request(services, api_named(api), body, headers_for(api, "short"), policy)
    assert first.body is body and not first.changed and first.offloaded == []
    stored = await core.list_outputs(services, first.session.scope)
    again = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "short"), policy)
    assert not again.changed and again.offloaded == []
    assert len((await core.list_outputs(services, first.session.scope)).outputs) == len(stored.outputs) == 1
