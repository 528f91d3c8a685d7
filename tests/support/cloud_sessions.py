"""A long agent session (`TURNS` turns; the tests run `TESTED_TURNS`) through a cloud with its real SDK
(support/cloud_flows.py), for the tests and bench/: the model runs one build step per turn (a seeded tool output: every
other step a ~3,000-token log) and now and then searches an offloaded output (answered by the gateway's loop, unseen by
the client); `session_cost` prices what the upstream received at the cloud's cache prices."""

from __future__ import annotations

import random
from typing import Any

from llm_upstream import ReceivedRequest, Turn, reply, tool_call
from llm_upstream.script import Step
from support.cloud_flows import flow
from support.llm_conversations import handles_in

TURNS = 40  # bench/gateway_clouds.py's session
TESTED_TURNS = 16  # the tests': a search every sixth step comes twice, the cost already well under direct's
SESSION_FLOWS = ("bedrock-converse-stream", "bedrock-anthropic", "vertex-anthropic", "vertex-gemini", "azure-chat",
                 "azure-responses")  # fmt: skip
OUTPUT_PRICE = 5.0  # output tokens in base-input units (Claude Sonnet's 5x; the ratio is what is compared)


def session_script(turn: Turn, turns: int = TURNS) -> Step:
    """The upstream's side (see the module docstring); after `turns` steps it answers."""
    exchanges = turn.exchanges()
    steps = sum(1 for e in exchanges if e.name == "Bash")
    if steps >= turns:
        return reply("All steps done.")
    handles = handles_in(turn)
    last = exchanges[-1].name if exchanges else None
    if steps % 6 == 5 and handles and last != "search_large_output":
        return reply(tool_call("search_large_output", {"handle": handles[-1], "pattern": "step", "literal": True}))
    return reply(f"Step {steps}.", tool_call("Bash", {"command": f"make step{steps}"}))


def step_output(n: int) -> str:
    """A seeded tool output: every other step a log of ~3,000 tokens, else a short line."""
    rng = random.Random(n)
    if n % 2:
        return f"step {n}: ok"
    words = ("compile", "link", "module", "warning", "cache", "object", "target", "path")
    return "\n".join(f"step {n} line {i}: {' '.join(rng.choice(words) for _ in range(6))} {rng.randrange(10**6)}"
                     for i in range(220))  # fmt: skip


def run_session(name: str, base_url: str, label: str, turns: int = TURNS) -> None:
    """The client's side of the session with flow `name` against `base_url` (`label` keeps runs' prompts apart), for
    an upstream scripted with `session_script` of as many `turns`."""
    client = flow(name, system=f"[{label}] You are a careful build engineer. " + "Read every log in full. " * 120)
    client.user(f"Work through all the build steps ({name}, {label}).")
    for n in range(turns + 1):
        _, calls = client.turn(base_url)
        if not calls:
            return
        client.answer(calls, [step_output(n) for _ in calls])
    raise AssertionError("the session did not end")


def session_cost(requests: list[ReceivedRequest], prices: Any) -> float:
    """What `requests` cost at `prices` (`CachePrices`), in base-input-token units, output at `OUTPUT_PRICE`."""
    total = 0.0
    for r in requests:
        assert r.usage is not None
        total += prices.input_cost(uncached=r.usage.uncached, cache_read=r.usage.cache_read,
                                   cache_write=r.usage.cache_write) + OUTPUT_PRICE * r.output_tokens  # fmt: skip
    return total
