"""The real `openai` SDK (sync, async, streaming; Chat Completions and Responses) through the gateway to the
scripted upstream: a large tool output is offloaded, the model searches it through the gateway's retrieval tool,
and the client gets one ordinary completion / response (spliced when streamed, accepted by the SDK's stream
accumulators)."""

from __future__ import annotations

import json

import openai

from llm_upstream import UpstreamServer, reply, tool_call
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_CHAT,
    BASH_RESPONSES,
    NEEDLE,
    build_log,
    chat_messages,
    responses_input,
    search_then_answer,
)

MODEL = "gpt-5"


def _client(gateway_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway_url, api_key="sk-test", max_retries=0)


def _check_chat_loop(upstream: UpstreamServer, log: str) -> None:
    sent = upstream.received("openai_chat", ok_only=True)
    assert len(sent) == 2
    first, follow = sent[0].body, sent[1].body
    assert first["messages"][3]["content"].startswith("Stored as out_")
    assert len(first["messages"][3]["content"]) < len(log) // 4
    assert follow["tools"] == first["tools"] and follow["messages"][:4] == first["messages"]
    assert follow["messages"][4]["tool_calls"][0]["function"]["name"] == "search_large_output"
    assert follow["messages"][5]["role"] == "tool" and NEEDLE in follow["messages"][5]["content"]


def test_chat_sync_json(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    completion = _client(gateway.openai_url).chat.completions.create(
        model=MODEL, messages=chat_messages(log), tools=[BASH_CHAT]
    )
    choice = completion.choices[0]
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    assert choice.message.content is not None and choice.message.content.endswith(f"Found it: {NEEDLE}")
    calls = upstream.received("openai_chat", ok_only=True)
    assert completion.usage is not None
    assert completion.usage.completion_tokens == sum(r.output_tokens for r in calls)
    _check_chat_loop(upstream, log)


def test_chat_stream_splice(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    client = _client(gateway.openai_url)
    with client.chat.completions.stream(
        model=MODEL, messages=chat_messages(log), tools=[BASH_CHAT], stream_options={"include_usage": True}
    ) as stream:
        for _ in stream:
            pass
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "stop" and not choice.message.tool_calls
    assert choice.message.content is not None and choice.message.content.endswith(f"Found it: {NEEDLE}")
    calls = upstream.received("openai_chat", ok_only=True)
    assert final.usage is not None and final.usage.completion_tokens == sum(r.output_tokens for r in calls)
    assert final.usage.prompt_tokens == sum(r.usage.prompt_tokens for r in calls if r.usage)
    _check_chat_loop(upstream, log)


def _check_responses_loop(upstream: UpstreamServer, log: str) -> None:
    sent = upstream.received("responses", ok_only=True)
    assert len(sent) == 2
    first, follow = sent[0].body, sent[1].body
    assert first["input"][2]["output"].startswith("Stored as out_") and len(first["input"][2]["output"]) < len(log)
    assert follow["tools"] == first["tools"] and follow["input"][:3] == first["input"]
    calls = [i for i in follow["input"] if i.get("type") == "function_call"]
    assert calls[-1]["name"] == "search_large_output"
    assert NEEDLE in follow["input"][-1]["output"]


def test_responses_sync_json(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    response = _client(gateway.openai_url).responses.create(
        model=MODEL, input=responses_input(log), tools=[BASH_RESPONSES], store=False
    )
    assert response.output_text.endswith(f"Found it: {NEEDLE}")
    assert not [i for i in response.output if i.type == "function_call"]
    calls = upstream.received("responses", ok_only=True)
    assert response.usage is not None and response.usage.output_tokens == sum(r.output_tokens for r in calls)
    _check_responses_loop(upstream, log)


def test_responses_stream_splice(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    with _client(gateway.openai_url).responses.stream(
        model=MODEL, input=responses_input(log), tools=[BASH_RESPONSES], store=False
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(numbers)))
    added = [e.output_index for e in events if e.type == "response.output_item.added"]
    assert added == list(range(len(final.output)))
    assert final.output_text.endswith(f"Found it: {NEEDLE}")
    assert not [i for i in final.output if i.type == "function_call"]
    calls = upstream.received("responses", ok_only=True)
    assert final.usage is not None and final.usage.output_tokens == sum(r.output_tokens for r in calls)
    _check_responses_loop(upstream, log)


async def test_async_chat_and_responses_streams(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = openai.AsyncOpenAI(base_url=gateway.openai_url, api_key="sk-test", max_retries=0)
    stream = await client.chat.completions.create(
        model=MODEL, messages=chat_messages(build_log()), tools=[BASH_CHAT], stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text.endswith(f"Found it: {NEEDLE}")
    upstream.use(search_then_answer())
    async with client.responses.stream(model=MODEL, input=responses_input(build_log()), tools=[BASH_RESPONSES]) as rs:
        final = await rs.get_final_response()
    assert final.output_text.endswith(f"Found it: {NEEDLE}")
    models = await client.models.list()  # relayed untouched
    assert MODEL in [m.id for m in models.data]
    assert json.loads(models.to_json())["data"]


def test_responses_chained_with_previous_response_id(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    """The conversation lives at the provider: the follow-up chains on the response that called the retrieval tool,
    and the client gets the last response's id, so its next turn chains on a response with every call answered."""
    script = search_then_answer()
    upstream.use([reply(tool_call("Bash", {"command": "make"})), script, script, reply("bye")])
    gateway = start_gateway(upstream)
    client = _client(gateway.openai_url)
    first = client.responses.create(model=MODEL, input="Build the project and tell me what failed.",
                                    tools=[BASH_RESPONSES])  # fmt: skip
    call = next(i for i in first.output if i.type == "function_call")
    second = client.responses.create(
        model=MODEL, previous_response_id=first.id, tools=[BASH_RESPONSES],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": build_log()}],
    )  # fmt: skip
    assert second.output_text.endswith(f"Found it: {NEEDLE}")
    sent = upstream.received("responses", ok_only=True)
    assert sent[1].body["input"][0]["output"].startswith("Stored as out_")
    assert sent[2].body["previous_response_id"] != first.id  # chained on the response that called the tool
    assert [i["type"] for i in sent[2].body["input"]] == ["function_call_output"]
    third = client.responses.create(model=MODEL, previous_response_id=second.id, input="thanks", tools=[BASH_RESPONSES])
    assert third.output_text == "bye"  # the provider accepted the chain: every call in it has its output
