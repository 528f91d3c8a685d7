"""Splice details through the real SDKs: keep-alives while the gateway waits for a slow follow-up, thinking blocks
(signed; the upstream checks the signatures on the follow-up and the next turn), a streamed mixed turn (the
client's tool call renumbered to index 1, stop reason tool_use), parallel tool calls in Chat (the client's call
renumbered to 0), a follow-up the upstream refuses (the API's error event ends the stream) and a client that
disconnects while the gateway waits for the follow-up (the follow-up is cancelled upstream)."""

from __future__ import annotations

import json
import time
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam, ThinkingConfigParam

from llm_upstream import ApiError, Thinking, Turn, UpstreamServer, reply, tool_call
from mcp_offload.gateway.options import LoopLimits
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_ANTHROPIC,
    BASH_CHAT,
    NEEDLE,
    anthropic_messages,
    build_log,
    chat_messages,
    handles_in,
    search_then_answer,
)

MODEL = "claude-sonnet-4-6"
HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}


def _search(turn: Turn) -> Any:
    return tool_call("search_large_output", {"handle": handles_in(turn)[0], "pattern": "FATAL", "literal": True})


def _request(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 2048, "messages": anthropic_messages(build_log()),
            "tools": [BASH_ANTHROPIC], **extra}  # fmt: skip


def test_pings_while_waiting_for_a_slow_follow_up(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use([lambda turn: reply("Looking. ", _search(turn)), reply("done", first_token_delay_s=1.2)])
    gateway = start_gateway(upstream, limits=LoopLimits(max_loops=2, ping_interval_s=0.25))
    with (
        httpx2.Client(timeout=30) as http,
        http.stream(
            "POST", gateway.base_url + "/v1/messages", json={**_request(), "stream": True}, headers=HEADERS
        ) as response,
    ):
        raw = b"".join(response.iter_raw())
    names = [line[7:] for line in raw.decode().splitlines() if line.startswith("event: ")]
    waiting = names[names.index("content_block_stop") :]
    assert waiting.count("ping") >= 3, names  # ~1.2 s of waiting at 0.25 s
    assert names[-2:] == ["message_delta", "message_stop"] and names.count("message_start") == 1


def test_thinking_blocks_survive_the_loop_and_the_next_turn(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use([reply(Thinking("Run the build."), tool_call("Bash", {"command": "make"})),
                  lambda turn: reply(Thinking("I should search the log."), _search(turn)),
                  reply(Thinking("Found the line."), f"Found it: {NEEDLE}"), reply("bye")])  # fmt: skip
    thinking: ThinkingConfigParam = {"type": "enabled", "budget_tokens": 1024}
    question: MessageParam = {"role": "user", "content": "Build the project and tell me what failed."}
    direct = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0).messages.create(
        model=MODEL, max_tokens=2048, thinking=thinking, messages=[question], tools=[BASH_ANTHROPIC]
    )
    call = direct.content[-1]
    assert call.type == "tool_use"
    messages: list[Any] = [question, {"role": "assistant", "content": [b.model_dump() for b in direct.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id,
                                              "content": build_log()}]}]  # fmt: skip
    gateway = start_gateway(upstream)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    body = {**_request(thinking=thinking), "messages": messages}
    with client.messages.stream(**body) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "thinking", "text"]
    assert all(b.signature for b in final.content if b.type == "thinking")
    follow = upstream.received("anthropic", ok_only=True)[2].body
    assert follow["messages"][-2]["content"][0]["type"] == "thinking"  # sent back as produced, signature and all
    messages = [*messages, {"role": "assistant", "content": [b.model_dump() for b in final.content]},
                {"role": "user", "content": "thanks"}]  # fmt: skip
    answer = client.messages.create(**{**body, "messages": messages})
    assert answer.content[-1].text == "bye"  # the upstream accepted every signature
    assert [r.status for r in upstream.received("anthropic")] == [200, 200, 200, 200]


def test_streamed_mixed_turn(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer(extra=tool_call("Bash", {"command": "df -h"})))
    gateway = start_gateway(upstream)
    with anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0).messages.stream(
        **_request()
    ) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "name", None)) for b in final.content] == [("text", None), ("tool_use", "Bash")]
    assert final.content[1].input == {"command": "df -h"}  # type: ignore[union-attr]
    assert [e.index for e in events if e.type == "content_block_start"] == [0, 1]


def test_chat_parallel_calls_renumbered(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer(extra=tool_call("Bash", {"command": "df -h"})))
    gateway = start_gateway(upstream)
    client = openai.OpenAI(base_url=gateway.openai_url, api_key="k", max_retries=0)
    with client.chat.completions.stream(model="gpt-5", messages=chat_messages(build_log()), tools=[BASH_CHAT]) as s:
        final = s.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert [c.function.name for c in choice.message.tool_calls or []] == ["Bash"]
    call = (choice.message.tool_calls or [])[0]
    assert json.loads(call.function.arguments) == {"command": "df -h"}
    assert final.choices[0].message.content is not None and "Searching" in final.choices[0].message.content


def test_refused_follow_up_ends_the_stream_with_the_api_error(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use([lambda turn: reply(_search(turn)), ApiError(529, "Overloaded")])
    gateway = start_gateway(upstream)
    with (
        pytest.raises(anthropic.APIStatusError) as caught,
        anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0).messages.stream(
            **_request()
        ) as stream,
    ):
        stream.get_final_message()
    assert "529" in str(caught.value) and "follow-up" in str(caught.value)


def test_client_gone_while_waiting_cancels_the_follow_up(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use([lambda turn: reply("Looking. ", _search(turn)), reply("late " * 50, first_token_delay_s=0.5,
                                                                          event_delay_s=0.1)])  # fmt: skip
    gateway = start_gateway(upstream, limits=LoopLimits(max_loops=2, ping_interval_s=0.1))
    with (
        httpx2.Client(timeout=30) as http,
        http.stream(
            "POST", gateway.base_url + "/v1/messages", json={**_request(), "stream": True}, headers=HEADERS
        ) as response,
    ):
        for chunk in response.iter_raw():  # pings: the gateway waits for the follow-up; leave once it is sent
            if b"ping" in chunk and len(upstream.received("anthropic")) == 2:
                break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        sent = upstream.received("anthropic")
        if len(sent) == 2 and sent[1].client_gone:
            break
        time.sleep(0.05)
    sent = upstream.received("anthropic")
    assert len(sent) == 2 and sent[1].client_gone and not sent[1].finished


def test_chat_usage_asked_for_the_accounting_but_not_shown(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = openai.OpenAI(base_url=gateway.openai_url, api_key="k", max_retries=0)
    chunks = list(client.chat.completions.create(model="gpt-5", messages=chat_messages(build_log()),
                                                 tools=[BASH_CHAT], stream=True))  # fmt: skip
    assert all(c.choices and c.usage is None for c in chunks)  # no usage chunk: this client did not ask for one
    assert "".join(c.choices[0].delta.content or "" for c in chunks).endswith(f"Found it: {NEEDLE}")
    sent = upstream.received("openai_chat", ok_only=True)
    assert all(r.body["stream_options"] == {"include_usage": True} for r in sent)
    totals = httpx2.get(gateway.base_url + "/stats").json()["totals"]
    assert totals["output_tokens"] == sum(r.output_tokens for r in sent) > 0
