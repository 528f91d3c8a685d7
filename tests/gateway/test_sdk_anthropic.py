"""The real `anthropic` SDK (sync, async, streaming) through the gateway to the scripted upstream: a large tool
result is offloaded, the model searches it through the gateway's retrieval tool, and the client sees one ordinary
message (JSON or a spliced stream whose events the SDK's accumulator accepts)."""

from __future__ import annotations

from typing import Any

import anthropic

from llm_upstream import UpstreamServer
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, NEEDLE, anthropic_messages, build_log, search_then_answer

MODEL = "claude-sonnet-4-6"


def _request(log: str) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 512, "messages": anthropic_messages(log), "tools": [BASH_ANTHROPIC]}


def _check_loop(upstream: UpstreamServer, log: str) -> None:
    sent = upstream.received("anthropic", ok_only=True)
    assert len(sent) == 2, [r.body for r in sent]
    first, follow = sent[0].body, sent[1].body
    assert first is not None and follow is not None
    result = first["messages"][2]["content"][0]["content"]
    text = result if isinstance(result, str) else "".join(b["text"] for b in result)
    assert text.startswith("Stored as out_") and len(text) < len(log) // 4
    assert next(t["name"] for t in first["tools"]) == "Bash"
    assert "search_large_output" in [t["name"] for t in first["tools"]]
    assert follow["tools"] == first["tools"]  # byte-stable tools: the follow-up keeps the cached prefix
    assert follow["messages"][: len(first["messages"])] == first["messages"]
    assert follow["messages"][-2]["content"][-1]["name"] == "search_large_output"
    answer = follow["messages"][-1]["content"][0]
    assert answer["type"] == "tool_result" and NEEDLE in answer["content"]


def test_sync_json_loop_is_one_message(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-test", max_retries=0)
    message = client.messages.create(**_request(log))
    assert message.stop_reason == "end_turn"
    assert [b.type for b in message.content] == ["text", "text"]
    assert message.content[-1].text == f"Found it: {NEEDLE}"
    _check_loop(upstream, log)
    calls = upstream.received("anthropic", ok_only=True)
    assert message.usage.output_tokens == sum(r.output_tokens for r in calls)
    assert message.usage.cache_read_input_tokens == sum(r.usage.cache_read for r in calls if r.usage)
    assert message.usage.input_tokens == sum(r.usage.uncached for r in calls if r.usage)


def test_stream_splice_accumulates(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-test", max_retries=0)
    with client.messages.stream(**_request(log)) as stream:
        events = list(stream)
        final = stream.get_final_message()
    starts = [e.index for e in events if e.type == "content_block_start"]
    assert starts == list(range(len(starts))) == list(range(len(final.content)))
    assert [e.type for e in events].count("message_start") == 1
    assert [e.type for e in events].count("message_stop") == 1
    assert all(b.type == "text" for b in final.content)
    assert final.content[-1].text == f"Found it: {NEEDLE}"  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    calls = upstream.received("anthropic", ok_only=True)
    assert final.usage.output_tokens == sum(r.output_tokens for r in calls)
    assert final.usage.cache_read_input_tokens == sum(r.usage.cache_read for r in calls if r.usage)
    _check_loop(upstream, log)


async def test_async_stream_and_json(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = anthropic.AsyncAnthropic(base_url=gateway.base_url, api_key="sk-ant-test", max_retries=0)
    async with client.messages.stream(**_request(build_log())) as stream:
        final = await stream.get_final_message()
    assert final.content[-1].text == f"Found it: {NEEDLE}"  # type: ignore[union-attr]
    plain = await client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert plain.content[0].text  # type: ignore[union-attr]
