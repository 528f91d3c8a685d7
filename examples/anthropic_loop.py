"""An Anthropic-SDK agent loop with compaction, offline: the model's turns are scripted (no network, no API key).

Each step the "model" answers with a `tool_use` block (real `anthropic.types` objects, as `client.messages.create`
returns them); the loop runs the tool (a large JSON search result), appends the `tool_result`, and compacts the
history before the next call. It prints the history's tokens with and without compaction.

    python examples/anthropic_loop.py [--store DIR] [--steps 12]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from typing import Any

from anthropic.types import TextBlock, ToolUseBlock

from mcp_offload import Compactor


def search_tool(query: str, rng: random.Random) -> str:
    """A stand-in for a real tool: ~30k tokens of JSON search hits."""
    hits = [{"id": rng.randint(1, 10**6), "title": f"{query} result {i}", "score": rng.random()} for i in range(1500)]
    return json.dumps({"query": query, "hits": hits})


def scripted_model(step: int, steps: int) -> list[Any]:
    """What `client.messages.create(...).content` would hold at this step."""
    if step == steps - 1:
        return [TextBlock(type="text", text="Done: the best hits are stored and I queried what I needed.")]
    return [ToolUseBlock(type="tool_use", id=f"toolu_{step:03d}", name="search", input={"query": f"topic {step}"})]


def run(store: str, steps: int) -> tuple[int, int]:
    rng = random.Random(1)
    raw: list[Any] = [{"role": "user", "content": "Research these topics and summarise."}]
    with Compactor(store=store, session="anthropic-example") as compactor:
        history: list[Any] = list(raw)
        tools = compactor.tools("anthropic")  # pass as tools= to messages.create: the model can read results back
        assert {t["name"] for t in tools} >= {"read_large_output", "query_large_output"}
        for step in range(steps):
            content = scripted_model(step, steps)  # response = client.messages.create(messages=history, tools=…)
            for messages in (raw, history):
                messages.append({"role": "assistant", "content": content})
            for block in content:
                if isinstance(block, ToolUseBlock):
                    result = search_tool(str(block.input["query"]), rng)
                    turn = {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": block.id, "content": result}],
                    }
                    raw.append(turn)
                    history.append(turn)
            history = compactor.compact(history, boundary="all")
        without = compactor.usage(raw).tokens
        with_ = compactor.usage(history).tokens
    return without, with_


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", help="store directory (default: a temporary one)")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        without, with_ = run(args.store or tmp, args.steps)
    print(f"history tokens without compaction: {without:>9,}")
    print(f"history tokens with compaction:    {with_:>9,}  ({100 * with_ / without:.1f}%)")


if __name__ == "__main__":
    main()
