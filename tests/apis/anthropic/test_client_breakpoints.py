"""Cache breakpoints for Anthropic clients that set none: the rules as a table, then a plain `anthropic` SDK app
(no `cache_control` anywhere) through the real gateway against the cache-simulating upstream, turn by turn: every
request is the previous one with only the markers moved (golden bytes), the same request gives the same bytes
after a restart, at most four breakpoints even through the retrieval loop, and from the second request on the
whole previous prompt is read from the cache; with the setting off, nothing is cached, as going direct."""

from __future__ import annotations

import copy
import itertools
import json
import re
from pathlib import Path
from typing import Any

import anthropic
import pytest

from llm_upstream import Turn, UpstreamServer, reply, tool_call
from mcp_offload.apis.anthropic.client_breakpoints import EPHEMERAL, marks_anything, with_client_breakpoints
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, NEEDLE, build_log, unmarked

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are a careful build engineer. " + " ".join(f"Rule {i}: read the whole log first." for i in range(300))
MARK = {"cache_control": EPHEMERAL}


def markers(body: dict[str, Any]) -> int:
    return json.dumps(body).count('"cache_control"')


def test_the_breakpoints_go_on_the_system_the_previous_turn_and_the_last_message() -> None:
    body: dict[str, Any] = {
        "model": MODEL, "max_tokens": 5, "system": "sys", "tools": [BASH_ANTHROPIC],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                                         {"type": "text", "text": ""}]},
        ],
    }  # fmt: skip
    before = copy.deepcopy(body)
    out = with_client_breakpoints(body)
    assert body == before  # never mutated
    assert out["system"] == [{"type": "text", "text": "sys", **MARK}]
    assert out["messages"][0] == {"role": "user", "content": [{"type": "text", "text": "go", **MARK}]}
    assert out["messages"][1] == body["messages"][1]
    assert out["messages"][2]["content"] == [
        {**body["messages"][2]["content"][0], **MARK},
        {"type": "text", "text": ""},
    ]
    assert out["tools"] == body["tools"] and markers(out) == 3
    assert with_client_breakpoints(copy.deepcopy(body)) == out  # a pure function of the request

    # one turn later: the markers moved, the content (strings as text blocks) is the same bytes
    later = {**body, "messages": [*body["messages"], {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
                                  {"role": "user", "content": "and now?"}]}  # fmt: skip
    after = with_client_breakpoints(later)
    assert unmarked(after["messages"][:3]) == unmarked(out["messages"]) and markers(after) == 3
    assert "cache_control" in after["messages"][2]["content"][0] and "cache_control" not in json.dumps(
        after["messages"][0]
    )


@pytest.mark.parametrize(
    "body",
    [
        {"cache_control": EPHEMERAL, "messages": [{"role": "user", "content": "x"}]},
        {"system": [{"type": "text", "text": "s", **MARK}], "messages": [{"role": "user", "content": "x"}]},
        {"tools": [{**BASH_ANTHROPIC, **MARK}], "messages": [{"role": "user", "content": "x"}]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "x", **MARK}]}, {"role": "user",
                                                                                            "content": "y"}]},
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                                    "content": [{"type": "text", "text": "r", **MARK}]}]}]},
        {"messages": [{"role": "user", "content": [{"type": "thinking", "thinking": "t"}]}]},  # nowhere to mark
        {"messages": []},
        {"prompt": "not a Messages request"},
    ],
)  # fmt: skip
def test_a_client_that_marks_anything_or_has_no_place_is_left_as_it_is(body: dict[str, Any]) -> None:
    assert with_client_breakpoints(body) is body
    assert marks_anything(body) == ("cache_control" in json.dumps(body))


def plain_app() -> Any:
    """A model that reads a big log with its Bash tool, searches it once through the gateway, then chats."""

    def step(turn: Turn) -> Any:
        ran = [e for e in turn.exchanges() if e.name == "Bash"]
        searched = [e for e in turn.exchanges() if e.name == "search_large_output"]
        handles = [h for e in ran for h in re.findall(r"Stored as (out_[a-z2-7]{26})", e.result or "")]
        if len(ran) < 3 and turn.last_user_text.startswith("step"):
            return reply(f"Running step {len(ran)}.", tool_call("Bash", {"command": f"make part{len(ran)}"}))
        if handles and not searched and "search_large_output" in turn.tool_names:
            return reply(tool_call("search_large_output", {"handle": handles[0], "pattern": "FATAL", "literal": True}))
        return reply(f"Noted ({len(turn.user_texts())}).")

    return step


def session(client: anthropic.Anthropic, upstream: UpstreamServer, turns: int) -> list[Any]:
    """The plain app's conversation: user turns, each followed by the model's tool calls and their results."""
    messages: list[Any] = []
    for n in range(turns):
        messages.append({"role": "user", "content": f"step {n}: carry on" if n < 3 else f"question {n}"})
        while True:
            answer = client.messages.create(model=MODEL, max_tokens=256, system=SYSTEM, messages=messages,
                                            tools=[BASH_ANTHROPIC])  # fmt: skip
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in answer.content]})
            calls = [b for b in answer.content if b.type == "tool_use"]
            if not calls:
                break
            log = build_log(lines=600 + 50 * len(messages), needle_at=300)
            messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": c.id, "content": log}
                                                         for c in calls]})  # fmt: skip
    return messages


def test_a_plain_sdk_app_gets_prompt_caching_with_golden_bytes(
    upstream: UpstreamServer, start_gateway: StartGateway, tmp_path: Path
) -> None:
    upstream.use(plain_app())
    store = str(tmp_path / "store")
    gateway = start_gateway(upstream, store=store)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-plain", max_retries=0)
    messages = session(client, upstream, 6)
    sent = upstream.received("anthropic", ok_only=True)
    assert len(sent) >= 9 and any("search_large_output" in json.dumps(r.body["messages"]) for r in sent)
    assert NEEDLE in json.dumps(messages)  # the loop's answer reached the client
    for before, after in itertools.pairwise(sent):
        assert 3 <= markers(after.body) <= 4  # the gateway's three, the loop's follow-up one more
        n = len(before.body["messages"])
        assert unmarked(after.body["messages"][:n]) == unmarked(before.body["messages"])  # only the markers moved
        assert json.dumps(after.body["system"]) == json.dumps(before.body["system"])  # the system bytes: fixed
        assert after.usage is not None and before.usage is not None
        if after.body["tools"] == before.body["tools"]:  # (the request that brings the retrieval tools rewrites all)
            assert after.usage.cache_read == before.usage.prompt_tokens  # the whole previous prompt from the cache
    assert sum(r.usage.cache_read for r in sent if r.usage) > 0.6 * sum(r.usage.prompt_tokens for r in sent if r.usage)

    last = copy.deepcopy(sent[-1].body)
    gateway.stop()
    again = start_gateway(upstream, store=store)  # a restart: the same request, the same bytes
    upstream.use([reply("again")])
    client = anthropic.Anthropic(base_url=again.base_url, api_key="sk-ant-plain", max_retries=0)
    client.messages.create(model=MODEL, max_tokens=256, system=SYSTEM, messages=messages[:-1], tools=[BASH_ANTHROPIC])
    assert json.dumps(upstream.received("anthropic", ok_only=True)[-1].body) == json.dumps(last)


def test_with_the_setting_off_a_plain_app_is_forwarded_unmarked_and_caches_nothing(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(plain_app())
    gateway = start_gateway(upstream, settings={"gateway_cache_breakpoints": False})
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-off", max_retries=0)
    session(client, upstream, 4)
    sent = upstream.received("anthropic", ok_only=True)
    assert all(markers(r.body) == 0 for r in sent)
    assert sum(r.usage.cache_read for r in sent if r.usage) == 0  # as going direct: no prompt caching at all
