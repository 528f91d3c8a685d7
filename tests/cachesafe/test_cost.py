"""The cost rule and window pressure, with numbers: when rewriting the cached prefix pays at the provider's prices,
and Anthropic's clear_tool_uses semantics (trigger, keep, clear_at_least, exclude_tools), batched and sticky."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.cost import Candidate, best_batch, remaining_requests, rewrite_gain
from mcp_offload.cachesafe.policy import ClearToolUses, RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.cachesafe.rewrite import CHARS_PER_TOKEN
from mcp_offload.core.services import Services
from mcp_offload.providers.anthropic.provider import FIVE_MINUTES
from mcp_offload.providers.registry import home_prices
from support.gateway_core import (
    Conversation,
    big_text,
    client_tools,
    headers_for,
    make_body,
    model_turn,
    open_services,
    results_turn,
    user_text,
    wire,
)


def test_remaining_requests_are_the_requests_so_far_between_1_and_50() -> None:
    assert remaining_requests(0) == 1 and remaining_requests(7) == 7 and remaining_requests(500) == 50


def test_rewrite_gain_numbers() -> None:
    # Anthropic, 100k cached prefix, results saving 8k tokens from position 90k, 10 requests to come:
    # now: (10k - 8k) * 1.25 - 10k * 0.1 = 1,500 extra; later: 8k * 0.1 * 10 = 8,000 saved -> gains 6,500
    assert rewrite_gain(FIVE_MINUTES, prefix_tokens=100_000, start=90_000, saved=8_000, remaining=10) == pytest.approx(
        6_500
    )
    # the same saving from position 0: 92k re-written at 1.25 instead of 100k read at 0.1 -> loses 97,000
    assert rewrite_gain(FIVE_MINUTES, prefix_tokens=100_000, start=0, saved=8_000, remaining=10) == pytest.approx(
        8_000 - (92_000 * 1.25 - 100_000 * 0.1)
    )
    # OpenAI (no write premium, cached reads at 0.5): 10k suffix -> (2k * 1.0 - 10k * 0.5) < 0 now, + 8k*0.5*1
    gpt4o = home_prices(api_named("openai_chat"), "gpt-4o")
    assert rewrite_gain(gpt4o, prefix_tokens=100_000, start=90_000, saved=8_000, remaining=1) == pytest.approx(7_000)


def test_best_batch_takes_the_start_that_pays_most_and_respects_clear_at_least() -> None:
    candidates = [Candidate(1_000, 6_000), Candidate(80_000, 6_000), Candidate(90_000, 6_000)]
    # from 90k: (10k-6k)*1.25 - 1k = 4k extra, 6k*0.1*20 = 12k saved: +8k
    # from 80k: (20k-12k)*1.25 - 2k = 8k extra, 12k*0.1*20 = 24k saved: +16k (the best)
    # from 1k: (99k-18k)*1.25 - 9.9k = 91.35k extra, 36k saved: -55.35k
    assert best_batch(FIVE_MINUTES, candidates, prefix_tokens=100_000, remaining=20, clear_at_least=5_000) == 1
    # at least 13k per batch: only the batch from 1k clears that much, and it does not pay
    assert best_batch(FIVE_MINUTES, candidates, prefix_tokens=100_000, remaining=20, clear_at_least=13_000) is None
    # clear_at_least over everything there is: no batch
    assert best_batch(FIVE_MINUTES, candidates, prefix_tokens=100_000, remaining=20, clear_at_least=50_000) is None
    # one request to come: nothing pays
    assert best_batch(FIVE_MINUTES, candidates, prefix_tokens=100_000, remaining=1, clear_at_least=1) is None


def test_cost_of_a_request() -> None:
    assert FIVE_MINUTES.input_cost(uncached=100, cache_read=10_000, cache_write=1_000) == pytest.approx(2_350)


# -- in rewrite_request -----------------------------------------------------------------------------------------
RNG = random.Random(3)
CONTENT: dict[str, str] = {}  # call id -> the result text history() put there last


def history(api: ApiName, sizes: list[int], *, tool: str = "bash", turns_after: int = 0) -> list[dict[str, Any]]:
    """A conversation whose tool results (sizes in tokens) were sent before the gateway decided anything on them
    (all but the last are in the prefix), then `turns_after` small turns."""
    messages: list[dict[str, Any]] = [user_text(api, "start")]
    for n, size in enumerate(sizes):
        cid = f"c{n}"
        messages += model_turn(api, [(cid, tool if n % 2 == 0 else "bash", {})], f"step {n}", n)
        CONTENT[cid] = big_text(RNG, size, cid)
        messages += results_turn(api, [(cid, CONTENT[cid])])
    for n in range(turns_after):
        cid = f"s{n}"
        messages += model_turn(api, [(cid, "bash", {})], f"small {n}", 100 + n)
        messages += results_turn(api, [(cid, "ok " * 10)])
    return messages


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    async with open_services(tmp_path / "store") as services:
        yield services


def first_difference(a: str, b: str) -> int:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))


async def test_cost_rule_rewrites_the_prefix_only_when_the_numbers_say_it_pays(services: Services) -> None:
    api: ApiName = "anthropic"
    policy = RewritePolicy(threshold_tokens=1_000, clear_tool_uses=ClearToolUses(10**9, 3, 2_000, ()), cost_rule=True)
    # A: one large result near the end of a long conversation (30 requests so far): the rewrite pays
    late = history(api, [300] * 8 + [4_000], turns_after=21)
    body = make_body(api, "sys", late, client_tools(api))
    rewrite = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "cost-a"), policy)
    assert len(rewrite.offloaded) == 1 and rewrite.tokens_kept_out > 3_000
    before, after = wire(body["messages"]), wire(rewrite.body["messages"])
    written = (len(after) - first_difference(before, after)) // CHARS_PER_TOKEN  # cache writes caused now
    saved = (len(before) - len(after)) // CHARS_PER_TOKEN  # per later request
    assert saved * 0.10 * 30 > written * (1.25 - 0.10) > 0
    # sticky: the next turn keeps the rewritten bytes
    again = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "cost-a"), policy)
    assert wire(again.body) == wire(rewrite.body) and again.offloaded == []

    # B: the same large result at the start, followed by 30k tokens nothing can replace (a user paste), and only
    # 2 requests so far: rewriting would re-write ~30k tokens at 1.25x to save 3.5k x 0.1 x 2 -> it does not pay
    early = history(api, [4_000])
    early += [user_text(api, big_text(RNG, 30_000, "paste"))]
    early += model_turn(api, [("t", "bash", {})], "ok", 9) + results_turn(api, [("t", "done")])
    body = make_body(api, "sys", early, client_tools(api))
    assert (await rewrite_request(services, api_named(api), body, headers_for(api, "cost-b"), policy)).body is body
    # ... and the very same result with the paste before it instead (it sits at the end of the prefix) pays
    late_one = [user_text(api, big_text(RNG, 30_000, "paste")), *history(api, [4_000])[1:]]
    late_one += model_turn(api, [("t", "bash", {})], "ok", 9) + results_turn(api, [("t", "done")])
    body = make_body(api, "sys", late_one, client_tools(api))
    flipped = await rewrite_request(services, api_named(api), body, headers_for(api, "cost-c"), policy)
    assert len(flipped.offloaded) == 1


async def test_cost_rule_off_leaves_the_prefix_alone(services: Services) -> None:
    api: ApiName = "openai_chat"
    body = make_body(api, "sys", history(api, [300] * 8 + [4_000], turns_after=21), client_tools(api))
    policy = RewritePolicy(threshold_tokens=1_000, clear_tool_uses=None, cost_rule=False)
    assert (await rewrite_request(services, api_named(api), body, headers_for(api, "off"), policy)).body is body


@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "responses"])
async def test_window_pressure_clears_all_but_keep_and_excluded_in_one_batch(services: Services, api: ApiName) -> None:
    sizes = [1_500] * 8  # 12k tokens of results, all inline in the prefix
    messages = history(api, sizes, tool="grep")
    clear = ClearToolUses(trigger_tokens=8_000, keep_tool_uses=2, clear_at_least_tokens=3_000, exclude_tools=("grep",))
    policy = RewritePolicy(threshold_tokens=5_000, clear_tool_uses=clear, cost_rule=False)
    body = make_body(api, "sys", messages, client_tools(api))
    rewrite = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "pressure"), policy)
    text = wire(rewrite.body)
    # results 0, 2, 4, 6 are grep (excluded); 6 and 7 are the two kept (7 is also the tail, under the threshold)
    for n in range(8):
        inline = wire(CONTENT[f"c{n}"])[1:-1] in text
        assert inline == (n % 2 == 0 or n == 7), n
    assert len(rewrite.offloaded) == 3 and rewrite.tokens_kept_out > 3_000
    # below the trigger now? the next request with one more turn is sticky, not a second batch
    messages += model_turn(api, [("n1", "bash", {})], "next", 50) + results_turn(api, [("n1", "fine")])
    body2 = make_body(api, "sys", messages, client_tools(api))
    later = await rewrite_request(services, api_named(api), body2, headers_for(api, "pressure"), policy)
    key = "messages" if api != "responses" else "input"
    assert wire(later.body[key]).startswith(wire(rewrite.body[key])[:-1])


async def test_window_pressure_does_nothing_when_it_cannot_clear_at_least(services: Services) -> None:
    api: ApiName = "anthropic"
    messages = history(api, [1_500] * 4)
    clear = ClearToolUses(trigger_tokens=1_000, keep_tool_uses=3, clear_at_least_tokens=3_000)
    policy = RewritePolicy(threshold_tokens=5_000, clear_tool_uses=clear, cost_rule=False)
    body = make_body(api, "sys", messages, client_tools(api))
    # only result 0 may go (3 kept): ~1,000 tokens saved < 3,000 -> no rewrite at all
    assert (await rewrite_request(services, api_named(api), body, headers_for(api, "weak"), policy)).body is body
    # below the trigger: nothing, whatever could be cleared
    calm = RewritePolicy(threshold_tokens=5_000, clear_tool_uses=ClearToolUses(10**7, 0, 1), cost_rule=False)
    assert (await rewrite_request(services, api_named(api), body, headers_for(api, "calm"), calm)).body is body


@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "responses"])
async def test_user_pastes_join_the_prefix_rules_but_never_the_last_user_turn(services: Services, api: ApiName) -> None:
    paste = big_text(RNG, 3_000, "paste")
    latest = big_text(RNG, 3_000, "latest")
    messages: list[dict[str, Any]] = [user_text(api, "Here is the log:\n" + paste)]
    messages += model_turn(api, [("a", "bash", {})], "ok", 1) + results_turn(api, [("a", "fine")])
    messages += [user_text(api, "And this one:\n" + latest)]
    messages += model_turn(api, [("b", "bash", {})], "ok", 2) + results_turn(api, [("b", "fine")])
    body = make_body(api, "sys", messages, client_tools(api))
    clear = ClearToolUses(trigger_tokens=2_000, keep_tool_uses=0, clear_at_least_tokens=1_000)
    off = RewritePolicy(threshold_tokens=1_000, clear_tool_uses=clear, cost_rule=False)
    assert (await rewrite_request(services, api_named(api), body, headers_for(api, "paste-off"), off)).body is body
    policy = RewritePolicy(
        threshold_tokens=1_000, clear_tool_uses=clear, cost_rule=False, offload_user_pastes_tokens=1_000
    )
    rewrite = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "paste"), policy)
    text = wire(rewrite.body)
    assert len(rewrite.offloaded) == 1 and wire(paste)[1:-1] not in text and wire(latest)[1:-1] in text
    key = "input" if api == "responses" else "messages"
    first = rewrite.body[key][1 if api == "openai_chat" else 0]  # (Chat: after the system message)
    assert first["content"].startswith("Stored as out_") and "user text" in first["content"]
    again = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, "paste"), policy)
    assert wire(again.body) == wire(rewrite.body)


def common_prefix(a: str, b: str) -> int:
    n, at, step = min(len(a), len(b)), 0, 4096
    while at < n and a[at : at + step] == b[at : at + step]:
        at += step
    while at < n and a[at] == b[at]:
        at += 1
    return min(at, n)


def prompt_cost(prompts: list[str]) -> float:
    """Input cost of a sequence of prompts at Anthropic's 5-minute cache prices, with a prompt cache that serves the
    longest common prefix with the previous prompt (4 chars a token): read 0.1x, the rest written at 1.25x."""
    total, previous = 0.0, ""
    for prompt in prompts:
        common = common_prefix(previous, prompt)
        total += common / 4 * FIVE_MINUTES.read + (len(prompt) - common) / 4 * FIVE_MINUTES.write
        previous = prompt
    return total


@pytest.mark.parametrize(
    ("large_every", "large_tokens", "bound"), [(10**9, 40, 1.0), (2, 3_000, 0.15), (1, 6_000, 0.1)]
)
async def test_simulated_cache_cost_against_going_direct(
    services: Services, large_every: int, large_tokens: int, bound: float
) -> None:
    """40 turns through rewrite_request vs the same bodies sent direct, priced with a prefix cache: a session of
    small results costs exactly what direct costs (the gateway changes nothing), tool-heavy ones much less."""
    api: ApiName = "anthropic"
    conv = Conversation(api, seed=8, large_every=large_every, large_tokens=large_tokens)
    direct, gateway = [], []
    for _ in range(40):
        conv.advance()
        body = conv.body()
        rewrite = await rewrite_request(
            services, api_named(api), copy.deepcopy(body), headers_for(api, "sim"), RewritePolicy()
        )
        direct.append(wire([body["tools"], body["system"], body["messages"]]))
        gateway.append(wire([rewrite.body["tools"], rewrite.body["system"], rewrite.body["messages"]]))
    ratio = prompt_cost(gateway) / prompt_cost(direct)
    print(f"simulated cost, gateway / direct: {ratio:.3f} (large_every={large_every}, large_tokens={large_tokens})")
    assert ratio <= bound, ratio
    if large_every > 1_000:
        assert ratio == 1.0
