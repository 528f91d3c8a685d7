"""An OpenAI-SDK (Chat Completions) agent loop with compaction and a token budget, offline: scripted model turns.

Each step the "model" answers with a `ChatCompletionMessage` carrying `tool_calls` (a real `openai.types` object, as
`client.chat.completions.create(...).choices[0].message` returns it); the loop runs the tool (a large log), appends
the `role: "tool"` message and compacts under a 32k-token context window (budget policy: only when the history
passes 80 % of it). When the scripted model calls `search_large_output`, the loop answers it in-process with
`compactor.run_tool`. It prints the history's tokens with and without compaction.

    python examples/openai_loop.py [--store DIR] [--steps 12]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from typing import Any

from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageFunctionToolCall

from mcp_offload import Compactor

CONTEXT_WINDOW = 32_000


def log_tool(service: str, rng: random.Random) -> str:
    """A stand-in for a real tool: ~15k tokens of log lines."""
    lines = [f"2026-11-21T10:{i % 60:02d}:00Z INFO {service}: request {rng.randint(1, 10**6)} ok" for i in range(1500)]
    lines[777] = f"2026-11-21T10:57:00Z ERROR {service}: upstream timeout"
    return "\n".join(lines)


def scripted_model(step: int, steps: int) -> ChatCompletionMessage:
    args: dict[str, Any]
    if step == steps - 1:
        return ChatCompletionMessage(role="assistant", content="All services checked; timeouts found.")
    name, args = "fetch_logs", {"service": f"svc-{step}"}
    if step % 4 == 3:
        name, args = "search_large_output", {"pattern": "ERROR", "max_results": 5}
    call = {"id": f"call_{step:03d}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return ChatCompletionMessage.model_validate({"role": "assistant", "content": None, "tool_calls": [call]})


def run(store: str, steps: int) -> tuple[int, int]:
    rng = random.Random(2)
    raw: list[Any] = [
        {"role": "system", "content": "You check service logs."},
        {"role": "user", "content": "Check all."},
    ]
    with Compactor(store=store, session="openai-example") as compactor:
        history: list[Any] = list(raw)
        for step in range(steps):
            message = scripted_model(step, steps)  # client.chat.completions.create(messages=history, tools=…)
            raw.append(message)
            history.append(message)
            for call in message.tool_calls or []:
                assert isinstance(call, ChatCompletionMessageFunctionToolCall)  # no custom tools in this loop
                args = json.loads(call.function.arguments)
                if call.function.name == "fetch_logs":
                    result = log_tool(args["service"], rng)
                else:  # one of the five retrieval tools: answered in-process, same code as the MCP server
                    result = compactor.run_tool(call.function.name, args)
                turn = {"role": "tool", "tool_call_id": call.id, "content": result}
                raw.append(turn)
                history.append(turn)
            history = compactor.compact(history, boundary="all", context_window=CONTEXT_WINDOW)
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
    print(f"history tokens with compaction:    {with_:>9,}  ({100 * with_ / without:.1f}%, window {CONTEXT_WINDOW:,})")


if __name__ == "__main__":
    main()
