"""Sub-agents and parallel conversations through the real gateway, with the real `anthropic` and `openai` SDKs against
the scripted upstream: a parent conversation's output is offloaded; a sub-agent conversation of the same credential
(another first message: another session) that its parent hands the handle gets the retrieval tools on that request
and reads the handle; another credential gets exactly the answer of an unknown handle; the injected tools are the
same bytes as in the parent; `list_outputs` stays per conversation."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from llm_upstream.script import Step
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.tool_text import retrieval_tools
from support.gateway_core import wire
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, BASH_CHAT, NEEDLE, anthropic_messages, build_log, chat_messages

GOLDEN = Path(__file__).parent / "golden"
MODEL = "claude-sonnet-4-6"
MENTION = re.compile(r"out_[a-z2-7]{26}")
UNKNOWN = "out_" + "a" * 26


def sub_agent() -> Callable[[Turn], Step]:
    """A model that reads the handle its last user text names with the retrieval tool, if it has that tool, and
    then says what the tool answered; `list_outputs` once the search is answered, if asked to list."""

    def step(turn: Turn) -> Any:
        handed = MENTION.findall(turn.last_user_text)
        done = [e for e in turn.exchanges() if e.name in ("search_large_output", "list_outputs")]
        if done and (done[-1].name == "list_outputs" or "list" not in turn.last_user_text):
            return reply("Tool said: " + " | ".join(str(e.result) for e in done))
        if done:
            return reply(tool_call("list_outputs", {}))
        if handed and "search_large_output" in turn.tool_names:
            return reply(tool_call("search_large_output", {"handle": handed[0], "pattern": "FATAL", "literal": True}))
        return reply("no retrieval tool" if handed else "Build looked at.")

    return step


def _parent_handle(upstream: UpstreamServer, api: str) -> str:
    found = MENTION.findall(json.dumps(upstream.received(api, ok_only=True)[0].body))  # type: ignore[arg-type]
    assert len(set(found)) == 1
    return str(found[0])


def test_a_sub_agent_handed_its_parents_handle_reads_it_anthropic(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(sub_agent())
    gateway = start_gateway(upstream)
    parent = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-parent", max_retries=0)
    kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "tools": [BASH_ANTHROPIC]}
    parent.messages.create(messages=anthropic_messages(build_log()), **kwargs)
    handle = _parent_handle(upstream, "anthropic")
    parent_tools = upstream.received("anthropic", ok_only=True)[0].body["tools"]
    assert parent_tools[1:] == retrieval_tools(api_named("anthropic"))

    task = f"Find the fatal line in {handle} and report it. Then list what you can see."
    answer = parent.messages.create(messages=[{"role": "user", "content": task}], **kwargs)  # a new conversation
    text = "".join(b.text for b in answer.content if b.type == "text")
    assert NEEDLE in text and "Tool said:" in text
    first, follow, last = upstream.received("anthropic", ok_only=True)[-3:]
    assert first.body["tools"] == parent_tools  # injected on the request that names the handle: the same bytes
    assert wire(first.body["tools"][1:]) == wire(json.loads((GOLDEN / "tools_anthropic.json").read_text("utf-8")))
    assert follow.body["tools"] == last.body["tools"] == parent_tools
    listed = last.body["messages"][-1]["content"][0]["content"]  # list_outputs: per conversation, nothing here
    assert handle not in json.dumps(listed) and "No stored outputs in this session" in text

    again = parent.messages.create(messages=[{"role": "user", "content": task}, *answer_turn(answer)], **kwargs)
    assert upstream.received("anthropic", ok_only=True)[-1].body["tools"] == parent_tools  # sticky
    assert again.content

    other = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-other", max_retries=0)
    refused = other.messages.create(messages=[{"role": "user", "content": task}], **kwargs)
    assert refused.content[0].type == "text" and refused.content[0].text == "no retrieval tool"  # no tools, no read
    assert upstream.received("anthropic")[-1].body["tools"] == [BASH_ANTHROPIC]  # its own tools only

    # a conversation of the other credential that has the tools (it offloaded its own output) asks for the handle
    # and for one nobody stored: the two answers are the same but for the handle
    def asked(name: str) -> str:
        messages: list[Any] = anthropic_messages(build_log(needle_at=5))
        messages[-1] = {**messages[-1], "content": [*messages[-1]["content"], {"type": "text", "text": f"Read {name}"}]}
        got = other.messages.create(messages=messages, **kwargs)
        return "".join(b.text for b in got.content if b.type == "text").replace(name, "HANDLE")

    assert asked(handle) == asked(UNKNOWN) and NEEDLE not in asked(handle) and "Tool said:" in asked(handle)


def answer_turn(message: anthropic.types.Message) -> list[Any]:
    return [
        {"role": "assistant", "content": [b.model_dump() for b in message.content]},
        {"role": "user", "content": "thanks"},
    ]


def test_a_sub_agent_handed_its_parents_handle_reads_it_openai(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(sub_agent())
    gateway = start_gateway(upstream)
    parent = openai.OpenAI(base_url=gateway.openai_url, api_key="sk-parent", max_retries=0)
    parent.chat.completions.create(model="gpt-5", messages=chat_messages(build_log()), tools=[BASH_CHAT])
    handle = _parent_handle(upstream, "openai_chat")
    parent_tools = upstream.received("openai_chat", ok_only=True)[0].body["tools"]

    task = f"Find the fatal line in {handle}."
    stream = parent.chat.completions.create(
        model="gpt-5", messages=[{"role": "user", "content": task}], tools=[BASH_CHAT], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert NEEDLE in text and "Tool said:" in text
    assert upstream.received("openai_chat", ok_only=True)[-2].body["tools"] == parent_tools

    other = openai.OpenAI(base_url=gateway.openai_url, api_key="sk-other", max_retries=0)
    refused = other.chat.completions.create(
        model="gpt-5", messages=[{"role": "user", "content": task}], tools=[BASH_CHAT]
    )
    assert refused.choices[0].message.content == "no retrieval tool"
