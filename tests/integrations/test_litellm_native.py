"""mcp-offload's own LiteLLM guardrail (`mcp_offload.integrations.litellm.OffloadGuardrail`, configured by name in
config.yaml) in the real LiteLLM proxy: the request reaching the scripted upstream is rewritten by the gateway core,
the model's read/search/jq calls are answered in LiteLLM's agentic loop, and the next turn's prefix is unchanged."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import openai
import pytest

from llm_upstream import UpstreamServer, tool_call
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
    responses_input,
    search_then_answer,
)


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
