"""The real LiteLLM proxy (pinned, .ci/litellm-deps.sh) with its `headroom` guardrail pointed at mcp-offload's
compression service (served by `mcp-offload gateway`), in front of the scripted, cache-simulating upstream.

The conversation: the model runs `Bash make` (a 1,500-line log with one planted failure), then `make test`; on the
next turn LiteLLM sends the log to /v1/compress (it holds back the newest tool exchange, the last user and every
assistant row), the upstream sees mcp-offload's reference + preview with the marker, the model calls
`headroom_retrieve` with a query, LiteLLM's own agentic loop asks /v1/retrieve, and the answer names the failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from llm_upstream.script import Step
from mcp_offload.settings import Settings
from support.gateway_server import GatewayServer, gateway_options
from support.litellm_proxy import MASTER_KEY, LiteLLMProxy, StartLiteLLM
from support.litellm_stack import CLAUDE, MODEL, StartRedis, scripted_models
from support.llm_conversations import BASH_CHAT, NEEDLE, build_log
from support.store import RedisServer

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

TENANT_KEY = "tenant-a-compress-key"
SYSTEM = "You are a build assistant.\n" + "\n".join(
    f"Rule {i}: report the exact failing line, never a guess." for i in range(120)
)
HASH = re.compile(r"Retrieve more: hash=([a-f0-9]{12,24})\]")


def agent(turn: Turn) -> Step:
    """Make, then make test, then (once a result is compressed) retrieve with a query, then answer from it."""
    exchanges = turn.exchanges()
    if exchanges and exchanges[-1].name == "headroom_retrieve" and exchanges[-1].result is not None:
        found = next((line for line in exchanges[-1].result.splitlines() if NEEDLE in line), "nothing found")
        return reply(f"The build failed: {found.strip()}")
    if turn.last_user_text.startswith("Thanks"):
        return reply("You're welcome.")
    if not exchanges:
        return reply(tool_call("Bash", {"command": "make"}))
    if len(exchanges) == 1:
        return reply(tool_call("Bash", {"command": "make test"}))
    hashes = [h for e in exchanges if e.result for h in HASH.findall(e.result)]
    if hashes and "headroom_retrieve" in turn.tool_names:
        return reply(tool_call("headroom_retrieve", {"hash": hashes[0], "query": "FATAL"}))
    return reply("I see no compressed output.")


@pytest.fixture(scope="module")
def service(litellm_upstream: UpstreamServer, start_redis: StartRedis) -> Iterator[GatewayServer]:
    settings = Settings(store=start_redis().url, jq_workers=1, jq_timeout_s=5.0)
    server = GatewayServer(settings, gateway_options(litellm_upstream)).start()
    try:
        yield server
    finally:
        server.stop()


def guardrail(name: str, service: GatewayServer, **params: Any) -> dict[str, Any]:
    """One `headroom` guardrail entry of LiteLLM's config.yaml, pointed at an mcp-offload service."""
    return {
        "guardrail_name": name,
        "litellm_params": {
            "guardrail": "headroom",
            "mode": "pre_call",
            "api_base": service.base_url,
            "api_key": TENANT_KEY,
            "default_on": False,  # each test names the one it uses (a request cannot turn a default_on one off)
            **params,
        },
    }


@pytest.fixture(scope="module")
def down_redis(start_redis: StartRedis) -> RedisServer:
    """The store the store-down tests stop."""
    return start_redis()


@pytest.fixture(scope="module")
def down_service(litellm_upstream: UpstreamServer, down_redis: RedisServer) -> Iterator[GatewayServer]:
    """A second service whose Redis the store-down tests stop."""
    server = GatewayServer(Settings(store=down_redis.url, jq_workers=1), gateway_options(litellm_upstream)).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def proxy(
    start_litellm: StartLiteLLM, litellm_upstream: UpstreamServer, service: GatewayServer, down_service: GatewayServer
) -> LiteLLMProxy:
    return start_litellm(
        {
            "model_list": scripted_models(litellm_upstream),
            "guardrails": [
                guardrail("mcp-offload", service),
                guardrail("mcp-offload-down", down_service),  # fail_closed: LiteLLM's default
                guardrail("mcp-offload-down-open", down_service, unreachable_fallback="fail_open"),
            ],
        }
    )


def _client(proxy: LiteLLMProxy, **headers: str) -> openai.OpenAI:
    return openai.OpenAI(
        base_url=proxy.base_url + "/v1", api_key=MASTER_KEY, max_retries=0, timeout=120, default_headers=headers
    )


def chat(client: openai.OpenAI, messages: list[dict[str, Any]], guardrail: str = "mcp-offload") -> Any:
    """One chat turn through the proxy, running `guardrail` (named in the body, where LiteLLM reads it)."""
    return client.chat.completions.create(
        model=MODEL,
        messages=messages,  # type: ignore[arg-type]
        tools=[BASH_CHAT],
        extra_body={"guardrails": [guardrail]},
    )


def _as_dict(message: Any) -> dict[str, Any]:
    data: dict[str, Any] = message.model_dump(exclude_none=True)
    data.setdefault("content", None)
    return {k: v for k, v in data.items() if k in ("role", "content", "tool_calls")}


def _chat_requests(litellm_upstream: UpstreamServer, since: int) -> list[dict[str, Any]]:
    return [r.json for r in litellm_upstream.requests[since:] if r.api == "openai_chat"]


def test_compacted_retrieved_and_sticky_through_the_real_litellm_proxy(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    litellm_upstream.use(agent)
    client = _client(proxy)
    log_text = build_log()
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Build the project and tell me what failed."},
    ]
    start = len(litellm_upstream.requests)
    first = chat(client, messages)
    call = first.choices[0].message.tool_calls[0]
    messages += [_as_dict(first.choices[0].message), {"role": "tool", "tool_call_id": call.id, "content": log_text}]
    second = chat(client, messages)
    call = second.choices[0].message.tool_calls[0]
    messages += [_as_dict(second.choices[0].message), {"role": "tool", "tool_call_id": call.id, "content": "12 passed"}]

    third = chat(client, messages)
    answer = third.choices[0].message.content or ""
    assert NEEDLE in answer, (answer, proxy.log()[-4000:])  # the model's retrieval was answered by mcp-offload

    sent = _chat_requests(litellm_upstream, start)
    assert len(sent) == 4, [json.dumps(b)[:300] for b in sent]  # make, make test, the turn, LiteLLM's follow-up
    assert sent[1]["messages"][3]["content"] == log_text  # LiteLLM holds the newest exchange back: sent inline once
    compacted = sent[2]["messages"][3]["content"]
    assert isinstance(compacted, str) and compacted.startswith("Stored as out_")
    assert len(compacted) < len(log_text) / 10  # the request reaching the upstream is compacted
    (hash_value,) = HASH.findall(compacted)
    assert "headroom_retrieve" in [t["function"]["name"] for t in sent[2]["tools"]]
    follow_up = sent[3]["messages"]
    assert follow_up[-1]["role"] == "tool" and NEEDLE in follow_up[-1]["content"]  # /v1/retrieve answered it
    assert follow_up[-2]["tool_calls"][0]["function"]["name"] == "headroom_retrieve"
    assert hash_value in follow_up[-2]["tool_calls"][0]["function"]["arguments"]

    messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": "Thanks!"}]
    fourth = chat(client, messages)
    assert fourth.choices[0].message.content == "You're welcome."
    later = _chat_requests(litellm_upstream, start)[4]["messages"]
    # sticky: the compressed prefix of turn 3 reaches the upstream byte for byte on turn 4 (no miss caused by us)
    assert json.dumps(later[:6], sort_keys=True) == json.dumps(sent[2]["messages"][:6], sort_keys=True)
    usage = litellm_upstream.requests[-1].usage
    assert usage is not None
    new_tokens = usage.prompt_tokens - usage.seen_prefix_tokens  # what turn 4 adds: the answer, "Thanks!"
    assert new_tokens < 100, usage
    assert usage.cache_read >= usage.seen_prefix_tokens - 128, usage  # the simulated provider cache reads all of it


def _history(log_text: str, call_ids: tuple[str, str]) -> list[dict[str, Any]]:
    """A conversation whose first tool result LiteLLM sends to /v1/compress (the second is the held-back newest)."""
    calls = [
        {"id": cid, "type": "function", "function": {"name": "Bash", "arguments": json.dumps({"command": cmd})}}
        for cid, cmd in zip(call_ids, ("make", "make test"), strict=True)
    ]
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"role": "assistant", "content": None, "tool_calls": calls[:1]},
        {"role": "tool", "tool_call_id": call_ids[0], "content": log_text},
        {"role": "assistant", "content": None, "tool_calls": calls[1:]},
        {"role": "tool", "tool_call_id": call_ids[1], "content": "12 passed"},
    ]


def test_bypass_header_through_the_proxy(proxy: LiteLLMProxy, litellm_upstream: UpstreamServer) -> None:
    litellm_upstream.use([reply("done")])
    start = len(litellm_upstream.requests)
    log_text = build_log(needle_at=42)
    answer = chat(_client(proxy, **{"x-headroom-bypass": "true"}), _history(log_text, ("call_b1", "call_b2")))
    assert answer.choices[0].message.content == "done"
    (sent,) = _chat_requests(litellm_upstream, start)
    assert sent["messages"][3]["content"] == log_text  # not compressed: the caller asked to bypass
    assert "headroom_retrieve" not in json.dumps(sent.get("tools", []))


def test_store_down_fails_closed_or_open_as_the_guardrail_says(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer, down_redis: RedisServer
) -> None:
    litellm_upstream.use([reply("answered")] * 2)
    log_text = build_log(needle_at=99)
    down_redis.stop()  # the service's store is down
    start = len(litellm_upstream.requests)
    client = _client(proxy)
    with pytest.raises(openai.APIStatusError) as refused:
        chat(client, _history(log_text, ("call_d1", "call_d2")), guardrail="mcp-offload-down")
    error = refused.value
    assert error.status_code >= 500
    text = json.dumps(error.body)
    assert "store_unavailable" in text and "Retry later" in text  # our message, in LiteLLM's error contract
    assert "Traceback" not in text and 'File \\"' not in text
    assert _chat_requests(litellm_upstream, start) == []  # fail-closed: nothing went upstream

    opened = chat(client, _history(log_text, ("call_o1", "call_o2")), guardrail="mcp-offload-down-open")
    assert opened.choices[0].message.content == "answered"
    (sent,) = _chat_requests(litellm_upstream, start)
    assert sent["messages"][3]["content"] == log_text  # fail-open: forwarded uncompressed, nothing lost


def test_unknown_hash_from_the_model_is_an_answer_not_an_error(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    """The model asks for a hash this request was not given (another tenant's, or made up): LiteLLM's guardrail
    refuses it before asking us, and mcp-offload answers a hash it does not know for this tenant with a 404."""

    def script(turn: Turn) -> Step:
        exchanges = turn.exchanges()
        if exchanges and exchanges[-1].name == "headroom_retrieve" and exchanges[-1].result is not None:
            return reply("retrieval said: " + exchanges[-1].result)
        return reply(tool_call("headroom_retrieve", {"hash": "ab" * 12}))

    litellm_upstream.use(script)
    answer = chat(_client(proxy), _history(build_log(needle_at=5), ("call_u1", "call_u2")))
    content = answer.choices[0].message.content or ""
    assert content.startswith("retrieval said: [Headroom: hash=abababababababababababab")
    assert "Traceback" not in content


def test_anthropic_messages_and_a_jq_query_through_the_proxy(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    """/v1/messages with the Anthropic SDK: LiteLLM translates for /v1/compress and writes the stubs back into
    Anthropic blocks; the model's `headroom_retrieve` query `jq:…` (the superset) runs jq over the stored JSON."""
    orders = json.dumps({"orders": [{"id": f"ord-{i}", "state": "held" if i == 613 else "open"} for i in range(800)]})

    def script(turn: Turn) -> Step:
        exchanges = turn.exchanges()
        if exchanges and exchanges[-1].name == "headroom_retrieve" and exchanges[-1].result is not None:
            return reply("Held: " + exchanges[-1].result.strip())
        hashes = [h for e in exchanges if e.result for h in HASH.findall(e.result)]
        if hashes and "headroom_retrieve" in turn.tool_names:
            program = 'jq:.orders[] | select(.state == "held") | .id'
            return reply(tool_call("headroom_retrieve", {"hash": hashes[0], "query": program}))
        return reply("no stub seen")

    litellm_upstream.use(script)
    start = len(litellm_upstream.requests)
    bash = {"name": "Bash", "description": "Run a shell command", "input_schema": {"type": "object"}}
    messages = [
        {"role": "user", "content": "Which order is held?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": orders}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "ok"}]},
    ]
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key=MASTER_KEY, max_retries=0, timeout=120)
    answer = client.messages.create(
        model=CLAUDE,
        max_tokens=256,
        messages=messages,  # type: ignore[arg-type]
        tools=[bash],  # type: ignore[list-item]
        extra_body={"guardrails": ["mcp-offload"]},
    )
    text = "".join(getattr(b, "text", "") for b in answer.content)
    assert text == 'Held: "ord-613"', (text, proxy.log()[-3000:])
    sent = [r.json for r in litellm_upstream.requests[start:]]
    assert len(sent) == 2
    stub = json.dumps(sent[0]["messages"][2]["content"])
    assert "Stored as out_" in stub and "Retrieve more: hash=" in stub and len(stub) < len(orders) / 4
