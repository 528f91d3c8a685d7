"""The transparent retrieval loop's edges, through the real SDKs: the loop limit (then one last call with
tool_choice none), a mixed turn (retrieval + the client's own tool), hostile handles (an error result, the loop
goes on), the next turn restored upstream-true (expansion), and visible mode (no loop)."""

from __future__ import annotations

import anthropic
import openai
from openai.types.chat import ChatCompletion

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.gateway.options import LoopLimits
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_ANTHROPIC,
    BASH_CHAT,
    NEEDLE,
    always_search,
    anthropic_messages,
    build_log,
    chat_messages,
    echo_assistant,
    handles_in,
    search_then_answer,
    unmarked,
)

MODEL = "claude-sonnet-4-6"


def _anthropic(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)


def test_loop_limit_ends_with_a_call_that_allows_no_tools(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(always_search())
    gateway = start_gateway(upstream, limits=LoopLimits(max_loops=2, ping_interval_s=0.2))
    with _anthropic(gateway.base_url).messages.stream(
        model=MODEL, max_tokens=256, messages=anthropic_messages(build_log()), tools=[BASH_ANTHROPIC]
    ) as stream:
        final = stream.get_final_message()
    sent = upstream.received("anthropic", ok_only=True)
    assert len(sent) == 4  # the first call, two loops with tools, one last call without
    assert [r.body.get("tool_choice") for r in sent] == [None, None, None, {"type": "none"}]
    assert all(r.body["tools"] == sent[0].body["tools"] for r in sent)  # the tools array never changes
    assert final.stop_reason == "end_turn" and final.content[-1].text == "giving up on searching"  # type: ignore[union-attr]
    assert not [b for b in final.content if b.type == "tool_use"]


def test_mixed_turn_passes_only_the_client_tool_and_restores_next_turn(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(search_then_answer(extra=tool_call("Bash", {"command": "df -h"}, id="toolu_client")))
    gateway = start_gateway(upstream)
    client = _anthropic(gateway.base_url)
    messages = anthropic_messages(build_log())
    message = client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC])
    assert message.stop_reason == "tool_use"
    assert [(b.type, getattr(b, "name", None)) for b in message.content] == [("text", None), ("tool_use", "Bash")]
    first = upstream.received("anthropic", ok_only=True)[0].body
    assert len(upstream.received("anthropic", ok_only=True)) == 1  # no follow-up: the client runs its tool
    # the next turn: the client answers its own tool; the gateway puts the retrieval exchange back in
    upstream.use([reply("all clear")])
    messages = [*messages, echo_assistant(message.content, exclude_none=True),
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_client",
                                              "content": "/dev/sda1 91%"}]}]  # fmt: skip
    again = client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC])
    assert again.content[0].text == "all clear"  # type: ignore[union-attr]
    second = upstream.received("anthropic", ok_only=True)[-1].body
    assistant = second["messages"][3]["content"]
    assert [b.get("name") for b in assistant if b["type"] == "tool_use"] == ["search_large_output", "Bash"]
    results = second["messages"][4]["content"]
    assert [r["tool_use_id"] for r in results][-1] == "toolu_client"
    assert any(NEEDLE in str(r["content"]) for r in results)  # the retrieval result, as the model saw it
    assert unmarked(second["messages"][:3]) == unmarked(first["messages"])  # prefix byte-stable but the markers


def test_expansion_restores_the_loop_on_the_next_turn(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = _anthropic(gateway.base_url)
    messages = anthropic_messages(build_log())
    message = client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC])
    follow = upstream.received("anthropic", ok_only=True)[1]
    upstream.use([reply("you're welcome")])
    messages = [*messages, echo_assistant(message.content), {"role": "user", "content": "thanks"}]
    client.messages.create(model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC])
    nxt = upstream.received("anthropic", ok_only=True)[-1]
    # upstream-true: the follow-up's messages (with the retrieval exchange) are the next request's prefix
    assert unmarked(nxt.body["messages"][: len(follow.body["messages"])]) == unmarked(follow.body["messages"])
    assert nxt.usage is not None and follow.usage is not None
    # the simulated prompt cache has seen the whole follow-up prompt as this request's prefix
    assert nxt.usage.extends_previous and nxt.usage.seen_prefix_tokens == follow.usage.prompt_tokens


def test_hostile_handles_get_error_results_and_the_loop_goes_on(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    hostile = ["../../etc/passwd", "out_" + "x" * 5000, "out_doesnotexist1234", "", "\x00"]

    def step(turn: Turn):  # type: ignore[no-untyped-def]
        done = [e for e in turn.exchanges() if e.name == "read_large_output"]
        if len(done) < len(hostile):
            return reply(tool_call("read_large_output", {"handle": hostile[len(done)], "start_line": 1}))
        return reply("errors: " + " | ".join((e.result or "")[:60] for e in done))

    upstream.use(step)
    gateway = start_gateway(upstream, limits=LoopLimits(max_loops=10, ping_interval_s=0.2))
    message = _anthropic(gateway.base_url).messages.create(
        model=MODEL, max_tokens=256, messages=anthropic_messages(build_log()), tools=[BASH_ANTHROPIC]
    )
    assert message.content[-1].text.startswith("errors: ")  # type: ignore[union-attr]
    last = upstream.received("anthropic", ok_only=True)[-1].body["messages"]
    results = [b for m in last if isinstance(m["content"], list) for b in m["content"] if b["type"] == "tool_result"]
    errors = [r for r in results if r.get("is_error")]
    assert len(errors) == len(hostile)
    assert all("Traceback" not in str(r["content"]) and r["content"] for r in errors)


def test_visible_mode_sends_retrieval_calls_to_the_client(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream, policy=RewritePolicy(retrieval="visible"))
    client = openai.OpenAI(base_url=gateway.openai_url, api_key="sk-test", max_retries=0)
    completion = client.chat.completions.create(model="gpt-5", messages=chat_messages(build_log()), tools=[BASH_CHAT])
    calls = completion.choices[0].message.tool_calls or []
    assert [c.function.name for c in calls] == ["search_large_output"]  # type: ignore[union-attr]
    assert completion.choices[0].finish_reason == "tool_calls"
    assert len(upstream.received("openai_chat", ok_only=True)) == 1


def test_a_model_that_ignores_tool_choice_none_still_ends(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    def stubborn(turn: Turn):  # type: ignore[no-untyped-def]
        handles = handles_in(turn)
        return reply(f"try {len(turn.exchanges())}. ", tool_call("search_large_output", {"handle": handles[0],
                     "pattern": "FATAL"}))  # fmt: skip

    upstream.use(stubborn)
    gateway = start_gateway(upstream, limits=LoopLimits(max_loops=1, ping_interval_s=0.2))
    client = openai.OpenAI(base_url=gateway.openai_url, api_key="sk-test", max_retries=0)
    for stream in (False, True):
        upstream.reset()
        upstream.use(stubborn)
        if stream:
            with client.chat.completions.stream(model="gpt-5", messages=chat_messages(build_log()),
                                                tools=[BASH_CHAT]) as s:  # fmt: skip
                completion: ChatCompletion = s.get_final_completion()
        else:
            completion = client.chat.completions.create(model="gpt-5", messages=chat_messages(build_log()),
                                                        tools=[BASH_CHAT])  # fmt: skip
        choice = completion.choices[0]
        assert choice.finish_reason == "stop" and not choice.message.tool_calls
        sent = upstream.received("openai_chat", ok_only=True)
        assert len(sent) == 3 and sent[-1].body["tool_choice"] == "none"
