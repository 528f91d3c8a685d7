"""Anthropic's prompt cache across a transparent retrieval loop, measured by the scripted upstream's cache simulation:
the follow-up call carries the client's last breakpoint at its end (stream/breakpoint.py), so the next turn, where
the gateway restores the loop's exchange from the expansion record, reads the whole follow-up prompt from the cache
(0 tokens missed because of the gateway), streaming and not, with the client's breakpoints below the maximum and at
it (then the client's last one is moved, and the request stays within the API's 4)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import anthropic
import pytest

from llm_upstream import UpstreamServer, reply
from mcp_offload.apis.anthropic.breakpoint import with_end_breakpoint
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_ANTHROPIC,
    NEEDLE,
    anthropic_messages,
    build_log,
    search_then_answer,
    unmarked,
)
from support.sdk_turns import CACHED, marked, system

MODEL = "claude-sonnet-4-6"


def breakpoints(body: dict[str, Any]) -> int:
    text = repr(body)
    return text.count("'cache_control'")


def call(client: anthropic.Anthropic, *, stream: bool, **kwargs: Any) -> Any:
    if stream:
        with client.messages.stream(**kwargs) as events:
            return events.get_final_message()
    return client.messages.create(**kwargs)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("system_breakpoints", [1, 3], ids=["room-left", "at-the-maximum"])
def test_the_turn_after_a_loop_reads_the_whole_follow_up_from_the_cache(
    upstream: UpstreamServer, start_gateway: StartGateway, stream: bool, system_breakpoints: int
) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-test", max_retries=0)
    kwargs: dict[str, Any] = {"model": MODEL, "max_tokens": 256, "tools": [BASH_ANTHROPIC]}
    kwargs["system"] = system(system_breakpoints)
    history = anthropic_messages(build_log())
    message = call(client, stream=stream, messages=marked(history), **kwargs)
    assert NEEDLE in message.content[-1].text
    first, follow = upstream.received("anthropic", ok_only=True)
    assert follow.body["messages"][-1]["content"][-1]["cache_control"] == CACHED  # the follow-up ends on one
    assert breakpoints(follow.body) == min(system_breakpoints + 2, 4)

    upstream.use([reply("you're welcome")])
    answered: list[Mapping[str, Any]] = [
        *history,
        {"role": "assistant", "content": [b.model_dump() for b in message.content]},
    ]
    call(client, stream=stream, messages=marked([*answered, {"role": "user", "content": "thanks"}]), **kwargs)
    nxt = upstream.received("anthropic", ok_only=True)[-1]
    assert nxt.usage is not None and follow.usage is not None and first.usage is not None
    assert follow.usage.cache_read == first.usage.prompt_tokens  # the loop's own call read the first call's prompt
    assert nxt.usage.cache_read == follow.usage.prompt_tokens  # and the next turn the whole follow-up: 0 missed
    # the restored exchange is the follow-up's content; only the breakpoint markers moved (as the client's do)
    restored = nxt.body["messages"][: len(follow.body["messages"])]
    assert unmarked(restored) == unmarked(follow.body["messages"]) and breakpoints(nxt.body) <= 4


def test_the_breakpoint_rules() -> None:
    """Unit rules: copied TTL; moved (also out of a tool_result's part) at the maximum; nothing when the client
    marks no message, uses automatic caching, or the follow-up appends nothing; the input is never mutated."""
    hour = {"type": "ephemeral", "ttl": "1h"}
    appended = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "read_large_output", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "found"}]},
    ]
    client = [
        {"role": "user", "content": [{"type": "text", "text": "go", "cache_control": hour}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "log", "cache_control": CACHED}]}]},
    ]  # fmt: skip
    body = {"model": MODEL, "system": system(1), "messages": [*client, *appended]}
    before = copy.deepcopy(body)
    out = with_end_breakpoint(body, 2)
    assert body == before and out["messages"][:4] == body["messages"][:4]
    assert out["messages"][-1]["content"][-1]["cache_control"] == CACHED and breakpoints(out) == 4

    full = {**body, "system": system(2)}  # 2 + 2 in the messages: at the maximum, the client's last one moves
    moved = with_end_breakpoint(full, 2)
    assert breakpoints(moved) == 4 and "cache_control" not in moved["messages"][2]["content"][0]["content"][0]
    assert moved["messages"][0] == full["messages"][0]  # the earlier (1h) one stays
    assert moved["messages"][-1]["content"][-1]["cache_control"] == CACHED

    only_first = {**body, "messages": [client[0], *appended]}
    assert with_end_breakpoint(only_first, 2)["messages"][-1]["content"][-1]["cache_control"] == hour  # TTL kept
    no_marks = {**body, "messages": [{"role": "user", "content": "go"}, *appended]}
    assert with_end_breakpoint(no_marks, 2) is no_marks
    automatic = {**body, "cache_control": CACHED}
    assert with_end_breakpoint(automatic, 2) is automatic
    assert with_end_breakpoint(body, 0) is body
