"""Two gateway instances on one Redis serve one conversation alternately: what instance A learned in a turn (the
retrieval loop's expansion, a bypass after a refused rewrite) holds on instance B's next turn."""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import pytest
from anthropic.types import MessageParam

from llm_upstream import ApiError, Turn, UpstreamServer, reply
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_ANTHROPIC,
    HANDLE,
    anthropic_messages,
    build_log,
    echo_assistant,
    search_then_answer,
    unmarked,
)
from support.store import RedisServer, have_redis_server

MODEL = "claude-sonnet-4-6"


@pytest.fixture
def redis() -> Iterator[RedisServer]:
    if not have_redis_server():
        pytest.skip("redis-server is not installed: two gateway instances need a shared Redis (.ci/redis.sh start)")
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


def test_loop_on_one_instance_restored_on_the_other(
    upstream: UpstreamServer, start_gateway: StartGateway, redis: RedisServer
) -> None:
    a = start_gateway(upstream, store=redis.url)
    b = start_gateway(upstream, store=redis.url)
    upstream.use(search_then_answer())
    messages = anthropic_messages(build_log())
    first = anthropic.Anthropic(base_url=a.base_url, api_key="k", max_retries=0).messages.create(
        model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC]
    )
    follow = upstream.received("anthropic", ok_only=True)[-1]
    upstream.use([reply("ok")])
    messages = [*messages, echo_assistant(first.content), {"role": "user", "content": "thanks"}]
    anthropic.Anthropic(base_url=b.base_url, api_key="k", max_retries=0).messages.create(
        model=MODEL, max_tokens=256, messages=messages, tools=[BASH_ANTHROPIC]
    )
    nxt = upstream.received("anthropic", ok_only=True)[-1]
    assert unmarked(nxt.body["messages"][: len(follow.body["messages"])]) == unmarked(follow.body["messages"])
    assert nxt.body["tools"] == follow.body["tools"]
    assert nxt.usage is not None and nxt.usage.extends_previous


def test_bypass_recorded_by_one_instance_holds_on_the_other(
    upstream: UpstreamServer, start_gateway: StartGateway, redis: RedisServer
) -> None:
    def step(turn: Turn):  # type: ignore[no-untyped-def]
        rewritten = any(HANDLE.search(e.result or "") for e in turn.exchanges())
        return ApiError(400, "this upstream does not accept references") if rewritten else reply("fine")

    upstream.use(step)
    a = start_gateway(upstream, store=redis.url)
    b = start_gateway(upstream, store=redis.url)
    messages = anthropic_messages(build_log())
    anthropic.Anthropic(base_url=a.base_url, api_key="k", max_retries=0).messages.create(
        model=MODEL, max_tokens=64, messages=messages, tools=[BASH_ANTHROPIC]
    )
    assert [r.status for r in upstream.received("anthropic")] == [400, 200]
    more: list[MessageParam] = [{"role": "assistant", "content": "fine"}, {"role": "user", "content": "more?"}]
    answer = anthropic.Anthropic(base_url=b.base_url, api_key="k", max_retries=0).messages.create(
        model=MODEL, max_tokens=64, messages=[*messages, *more], tools=[BASH_ANTHROPIC]
    )
    assert answer.content[0].text == "fine"  # type: ignore[union-attr]
    assert [r.status for r in upstream.received("anthropic")] == [400, 200, 200]  # B sent it unmodified at once
