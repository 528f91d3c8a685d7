"""mcp-offload's own LiteLLM guardrail (`mcp_offload.integrations.litellm.OffloadGuardrail`, configured by name in
config.yaml) in the real LiteLLM proxy: the request reaching the scripted upstream is rewritten by the gateway core,
the model's read/search/jq calls are answered in LiteLLM's agentic loop, and the next turn's prefix is unchanged."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from llm_upstream import ReceivedRequest, Turn, UpstreamServer, reply, tool_call
from llm_upstream.script import Step
from support.litellm_proxy import MASTER_KEY, SRC, LiteLLMProxy, StartLiteLLM
from support.litellm_stack import CLAUDE, MODEL, OFFLOAD_GUARDRAIL, StartRedis, scripted_models
from support.llm_conversations import (
    BASH_ANTHROPIC,
    BASH_CHAT,
    BASH_RESPONSES,
    NEEDLE,
    anthropic_messages,
    build_log,
    chat_messages,
    echo_assistant,
    handles_in,
    responses_input,
    search_then_answer,
)

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage


@pytest.fixture(scope="module")
def proxy(start_litellm: StartLiteLLM, litellm_upstream: UpstreamServer, start_redis: StartRedis) -> LiteLLMProxy:
    config = {
        "model_list": scripted_models(litellm_upstream),
        "guardrails": [
            {
                "guardrail_name": "mcp-offload",
                "litellm_params": {
                    "guardrail": OFFLOAD_GUARDRAIL,
                    "mode": "pre_call",
                    "default_on": True,
                    "store": start_redis().url,
                    "threshold_tokens": 1000,
                },
            }
        ],
    }
    return start_litellm(config, env={"PYTHONPATH": str(SRC)})


def _client(proxy: LiteLLMProxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.base_url + "/v1", api_key=MASTER_KEY, max_retries=0, timeout=120)


def test_chat_completions_rewritten_and_retrieved_in_litellms_loop(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    messages = chat_messages(build_log())
    answer = _client(proxy).chat.completions.create(model=MODEL, messages=messages, tools=[BASH_CHAT])
    content = answer.choices[0].message.content or ""
    assert NEEDLE in content, (content, proxy.log()[-4000:])
    sent = [r.json for r in litellm_upstream.requests[start:]]
    assert len(sent) == 2, [json.dumps(b)[:400] for b in sent]
    assert sent[0]["messages"][3]["content"].startswith("Stored as out_")  # rewritten in this very request
    names = [t["function"]["name"] for t in sent[0]["tools"]]
    assert names[0] == "Bash" and {"read_large_output", "search_large_output", "query_large_output"} <= set(names)
    assert NEEDLE in sent[1]["messages"][-1]["content"]  # the search ran against the store, in LiteLLM's loop

    litellm_upstream.use(["Anything else?"])
    again: list[Any] = [*messages, {"role": "assistant", "content": content}, {"role": "user", "content": "Thanks"}]
    _client(proxy).chat.completions.create(model=MODEL, messages=again, tools=[BASH_CHAT])
    later = litellm_upstream.requests[-1].json
    assert later["messages"][:4] == sent[0]["messages"][:4]  # sticky: the same bytes on the next turn
    assert later["tools"] == sent[0]["tools"]  # byte-stable tools


def test_anthropic_messages_rewritten_and_retrieved(proxy: LiteLLMProxy, litellm_upstream: UpstreamServer) -> None:
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key=MASTER_KEY, max_retries=0, timeout=120)
    messages = anthropic_messages(build_log(needle_at=900))
    answer = client.messages.create(model=CLAUDE, max_tokens=512, messages=messages, tools=[BASH_ANTHROPIC])
    text = "".join(getattr(b, "text", "") for b in answer.content)
    assert NEEDLE in text, (text, proxy.log()[-4000:])
    sent = [r.json for r in litellm_upstream.requests[start:]]
    assert len(sent) == 2, [json.dumps(b)[:400] for b in sent]
    assert sent[0]["messages"][2]["content"][0]["content"].startswith("Stored as out_")
    assert "search_large_output" in [t.get("name") for t in sent[0]["tools"]]
    tool_result = sent[1]["messages"][-1]["content"][0]
    assert tool_result["type"] == "tool_result" and NEEDLE in json.dumps(tool_result)


def test_responses_rewritten_and_retrieved(proxy: LiteLLMProxy, litellm_upstream: UpstreamServer) -> None:
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    items = responses_input(build_log(needle_at=700))
    answer = _client(proxy).responses.create(model=MODEL, input=items, tools=[BASH_RESPONSES])
    assert NEEDLE in answer.output_text, (answer.output_text, proxy.log()[-4000:])
    sent = [r.json for r in litellm_upstream.requests[start:]]
    assert len(sent) == 2, [json.dumps(b)[:400] for b in sent]
    assert sent[0]["input"][2]["output"].startswith("Stored as out_")
    assert "search_large_output" in [t.get("name") for t in sent[0]["tools"]]
    assert sent[1]["input"][-1]["type"] == "function_call_output" and NEEDLE in sent[1]["input"][-1]["output"]


def test_streamed_chat_gets_the_loop_too(proxy: LiteLLMProxy, litellm_upstream: UpstreamServer) -> None:
    """A streamed request in a session that has the tools: LiteLLM runs it unstreamed (its converted-stream path),
    the loop answers the retrieval, and the client reads the final answer as a stream."""
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    messages = chat_messages(build_log(needle_at=1200))
    stream = _client(proxy).chat.completions.create(
        model=MODEL,
        messages=messages,
        tools=[BASH_CHAT],
        stream=True,
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert NEEDLE in text, (text, proxy.log()[-4000:])
    calls = [c for c in chunks if c.choices and c.choices[0].delta.tool_calls]
    assert calls == []  # the client never sees the retrieval call
    assert len(litellm_upstream.requests[start:]) == 2


def test_mixed_turn_answers_the_retrieval_and_the_model_replans(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    """The model calls search_large_output and the client's Bash in one turn: LiteLLM's loop answers the search
    only (the follow-up echoes that call alone), and the client gets the re-planned answer, never our tool."""
    litellm_upstream.use(search_then_answer(extra=tool_call("Bash", {"command": "make clean"})))
    start = len(litellm_upstream.requests)
    messages = chat_messages(build_log(needle_at=321))
    answer = _client(proxy).chat.completions.create(model=MODEL, messages=messages, tools=[BASH_CHAT])
    assert NEEDLE in (answer.choices[0].message.content or "")
    assert not answer.choices[0].message.tool_calls
    follow_up = litellm_upstream.requests[start + 1].json["messages"]
    echoed = [c["function"]["name"] for c in follow_up[-2]["tool_calls"]]
    assert echoed == ["search_large_output"] and follow_up[-1]["role"] == "tool"


# -- the turn after a loop: cache-safe ---------------------------------------------------------------------------
# The client receives only the loop's final answer; its next request carries that answer alone. The guardrail must
# put back what the upstream saw (the retrieval calls and their results), byte for byte, so the provider's prompt
# cache reads the whole previous prompt.


def _turn_after_the_loop(upstream: UpstreamServer, start: int, key: str) -> tuple[ReceivedRequest, ReceivedRequest]:
    """(the loop's last follow-up, the next turn's request) among the requests since `start`, checked to be the
    cache-safe pair: the follow-up's messages are the next request's prefix, the same JSON (key order included), and
    the simulated provider cache has the whole follow-up prompt as the next request's prefix."""
    *loop, follow, nxt = upstream.requests[start:]
    assert loop and all(r.status == 200 for r in (*loop, follow, nxt)), [r.error for r in (*loop, follow, nxt)]
    prefix = follow.json[key]
    assert json.dumps(nxt.json[key][: len(prefix)]) == json.dumps(prefix)  # the loop's messages, restored
    assert len(nxt.json[key]) == len(prefix) + 2  # + the final answer (restored) and the user's "Thanks"
    assert json.dumps(nxt.json["tools"]) == json.dumps(follow.json["tools"])
    assert nxt.usage is not None and follow.usage is not None
    assert nxt.usage.extends_previous, (nxt.usage, follow.usage)
    assert nxt.usage.seen_prefix_tokens == follow.usage.prompt_tokens  # no gateway-caused miss
    return follow, nxt


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_chat_next_turn_restores_the_loop_and_reads_the_whole_prompt_from_cache(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer, stream: bool
) -> None:
    """Two retrieval rounds (LiteLLM nests the second follow-up one depth deeper); then the client's next turn."""
    litellm_upstream.use(search_then_answer(rounds=2))
    start = len(litellm_upstream.requests)
    messages: list[Any] = chat_messages(build_log(needle_at=1401 if stream else 1400))
    client = _client(proxy)
    if stream:
        chunks = list(client.chat.completions.create(model=MODEL, messages=messages, tools=[BASH_CHAT], stream=True))
        content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        answer = client.chat.completions.create(model=MODEL, messages=messages, tools=[BASH_CHAT])
        content = answer.choices[0].message.content or ""
    assert content == f"Found it: {NEEDLE}", (content, proxy.log()[-4000:])
    assert len(litellm_upstream.requests[start:]) == 3  # the turn and two follow-ups

    litellm_upstream.use(["You're welcome."])
    again = [*messages, {"role": "assistant", "content": content}, {"role": "user", "content": "Thanks"}]
    thanks = client.chat.completions.create(model=MODEL, messages=again, tools=[BASH_CHAT])
    assert thanks.choices[0].message.content == "You're welcome."
    follow, nxt = _turn_after_the_loop(litellm_upstream, start, "messages")
    restored = nxt.json["messages"][4:-1]
    assert [m["role"] for m in restored] == ["assistant", "tool", "assistant", "tool", "assistant"]
    assert [c["function"]["name"] for m in restored[:-1:2] for c in m["tool_calls"]] == ["search_large_output"] * 2
    assert NEEDLE in restored[3]["content"] and restored[-1] == {"role": "assistant", "content": content}
    # OpenAI's cache: the whole previous prompt read, reported in 128-token steps
    assert nxt.usage is not None and follow.usage is not None
    assert nxt.usage.cache_read == follow.usage.prompt_tokens // 128 * 128 > 1024, nxt.usage


def test_mixed_turn_whose_replan_calls_the_clients_tool_is_restored_before_the_clients_result(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    """The model calls search_large_output and Bash at once; the loop answers the search, the model re-plans and calls
    Bash alone, which the client receives and answers. Its next request ends with its Bash result: the loop's round
    goes back in before the client's copy of the Bash call, which stays followed by the client's result."""

    def script(turn: Turn) -> Step:
        searched = any(e.name == "search_large_output" for e in turn.exchanges())
        df = [e.result for e in turn.exchanges() if e.arguments == {"command": "df -h /var/cache"} and e.result]
        if not searched and handles_in(turn):
            search = {"handle": handles_in(turn)[0], "pattern": "FATAL", "literal": True}
            return reply(tool_call("search_large_output", search), tool_call("Bash", {"command": "df -h"}))
        if not df:
            return reply(tool_call("Bash", {"command": "df -h /var/cache"}))
        return reply(f"Disk full: {df[0]}")

    litellm_upstream.use(script)
    start = len(litellm_upstream.requests)
    messages: list[Any] = chat_messages(build_log(needle_at=1408))
    client = _client(proxy)
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[BASH_CHAT]).choices[0].message
    calls = first.tool_calls or []
    assert [c.function.name for c in calls if c.type == "function"] == ["Bash"], first  # never our tool
    copy = first.model_dump(exclude_none=True, include={"role", "content", "tool_calls"})
    again = [*messages, copy, {"role": "tool", "tool_call_id": calls[0].id, "content": "/var/cache 100%"}]
    answer = client.chat.completions.create(model=MODEL, messages=again, tools=[BASH_CHAT])
    assert answer.choices[0].message.content == "Disk full: /var/cache 100%"
    _, nxt = _turn_after_the_loop(litellm_upstream, start, "messages")
    restored = nxt.json["messages"][4:]
    assert [m["role"] for m in restored] == ["assistant", "tool", "assistant", "tool"]
    assert [c["function"]["name"] for c in restored[0]["tool_calls"]] == ["search_large_output"]
    assert restored[-1] == {"role": "tool", "tool_call_id": calls[0].id, "content": "/var/cache 100%"}


def test_chat_client_on_an_anthropic_deployment_next_turn_extends_the_loops_prompt(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer
) -> None:
    """/v1/chat/completions to a Claude deployment: the loop and its expansion are in Chat form (the client's), and
    LiteLLM translates both the follow-up and the restored next turn to Anthropic Messages the same way."""
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    messages: list[Any] = chat_messages(build_log(needle_at=1406))
    client = _client(proxy)
    answer = client.chat.completions.create(model=CLAUDE, messages=messages, tools=[BASH_CHAT], max_tokens=512)
    content = answer.choices[0].message.content or ""
    assert content == f"Found it: {NEEDLE}", (content, proxy.log()[-4000:])
    assert [r.api for r in litellm_upstream.requests[start:]] == ["anthropic", "anthropic"]

    litellm_upstream.use(["You're welcome."])
    again = [*messages, {"role": "assistant", "content": content}, {"role": "user", "content": "Thanks"}]
    client.chat.completions.create(model=CLAUDE, messages=again, tools=[BASH_CHAT], max_tokens=512)
    _, nxt = _turn_after_the_loop(litellm_upstream, start, "messages")
    tool_use = [
        b for m in nxt.json["messages"] for b in m["content"] if isinstance(b, dict) and b["type"] == "tool_use"
    ]
    assert [b["name"] for b in tool_use] == ["Bash", "search_large_output"]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_anthropic_next_turn_restores_the_loop_and_reads_the_whole_prompt_from_cache(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer, stream: bool
) -> None:
    """/v1/messages with automatic caching (top-level `cache_control`: a breakpoint on each request's last block)."""
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key=MASTER_KEY, max_retries=0, timeout=120)
    caching = {"cache_control": {"type": "ephemeral"}}
    messages: list[Any] = anthropic_messages(build_log(needle_at=1403 if stream else 1402))
    answer: anthropic.types.Message
    if stream:
        with client.messages.stream(
            model=CLAUDE, max_tokens=512, messages=messages, tools=[BASH_ANTHROPIC], extra_body=caching
        ) as events:
            kinds = [e.type for e in events]
            answer = events.get_final_message()
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop"  # an SSE stream, as asked
    else:
        answer = client.messages.create(
            model=CLAUDE, max_tokens=512, messages=messages, tools=[BASH_ANTHROPIC], extra_body=caching
        )
    text = "".join(getattr(b, "text", "") for b in answer.content)
    assert text == f"Found it: {NEEDLE}", (text, proxy.log()[-4000:])

    litellm_upstream.use(["You're welcome."])
    again = [*messages, echo_assistant(answer.content), {"role": "user", "content": "Thanks"}]
    client.messages.create(model=CLAUDE, max_tokens=512, messages=again, tools=[BASH_ANTHROPIC], extra_body=caching)
    follow, nxt = _turn_after_the_loop(litellm_upstream, start, "messages")
    restored = nxt.json["messages"][3:-1]
    assert [m["role"] for m in restored] == ["assistant", "user", "assistant"]
    assert [b["name"] for b in restored[0]["content"] if b["type"] == "tool_use"] == ["search_large_output"]
    assert NEEDLE in json.dumps(restored[1]["content"])
    assert nxt.usage is not None and follow.usage is not None
    assert nxt.usage.cache_read == follow.usage.prompt_tokens, nxt.usage  # Anthropic: read to the block


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_responses_next_turn_restores_the_loop_and_reads_the_whole_prompt_from_cache(
    proxy: LiteLLMProxy, litellm_upstream: UpstreamServer, stream: bool
) -> None:
    litellm_upstream.use(search_then_answer())
    start = len(litellm_upstream.requests)
    client = _client(proxy)
    items: list[Any] = list(responses_input(build_log(needle_at=1405 if stream else 1404)))
    if stream:
        events = list(client.responses.create(model=MODEL, input=items, tools=[BASH_RESPONSES], stream=True))
        answer = next(e.response for e in events if e.type == "response.completed")
    else:
        answer = client.responses.create(model=MODEL, input=items, tools=[BASH_RESPONSES])
    assert answer.output_text == f"Found it: {NEEDLE}", (answer.output_text, proxy.log()[-4000:])

    litellm_upstream.use(["You're welcome."])
    echoed = [item.model_dump(exclude_none=True) for item in answer.output]  # the client's copy: the output items
    again = [*items, *echoed, {"role": "user", "content": "Thanks"}]
    client.responses.create(model=MODEL, input=again, tools=[BASH_RESPONSES])
    follow, nxt = _turn_after_the_loop(litellm_upstream, start, "input")
    restored = nxt.json["input"][3:-1]
    assert [i.get("type", "message") for i in restored] == ["message", "function_call", "function_call_output"] + [
        i.get("type", "message") for i in echoed
    ]
    assert NEEDLE in restored[2]["output"]
    assert nxt.usage is not None and follow.usage is not None
    assert nxt.usage.cache_read == follow.usage.prompt_tokens // 128 * 128 > 1024, nxt.usage
