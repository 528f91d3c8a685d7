"""pydantic-ai with mcp-offload, offline: the history capability compacts tool returns, the tools read them back.

pydantic-ai's own `FunctionModel` stands in for a real model (swap in `"openai:gpt-…"` or any model for a real
run): it fetches a ~15k-token log per step, and every third step searches the stored logs with
`search_large_output`. The agent's own code is the marked line. Prints what the model was sent with and without.

    python examples/pydantic_ai_offload.py [--store DIR] [--steps 12]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from mcp_offload import AsyncCompactor
from mcp_offload.integrations.pydantic_ai import offload_history, offload_tools


def fetch_logs(service: str) -> str:
    """Fetch a service's logs (~15k tokens)."""
    lines = [f"2026-11-21T10:{i % 60:02d}:00Z INFO {service}: request {i * 7919 % 10**6} ok" for i in range(1500)]
    lines[777] = f"2026-11-21T10:57:00Z ERROR {service}: upstream timeout"
    return "\n".join(lines)


def scripted(steps: int, sent: list[int]) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(len(ModelMessagesTypeAdapter.dump_json(messages)))
        step = len(sent)
        if step > steps:
            return ModelResponse(parts=[TextPart("Checked; svc timeouts found.")])
        arguments: dict[str, Any] = {"service": f"svc-{step}"}
        name = "fetch_logs"
        if step % 3 == 0:
            name, arguments = "search_large_output", {"pattern": "ERROR", "max_results": 5}
        return ModelResponse(parts=[ToolCallPart(name, arguments, tool_call_id=f"call_{step}")])

    return FunctionModel(answer)


async def run(store: str, steps: int, offload: bool) -> int:
    sent: list[int] = []
    async with AsyncCompactor(store=store, session="pydantic-ai-example") as compactor:
        capabilities: list[AbstractCapability[Any]] = [offload_history(compactor)] if offload else []  # + capability
        agent = Agent(scripted(steps, sent), capabilities=capabilities, tools=[fetch_logs, *offload_tools(compactor)])
        await agent.run("Check all services.", usage_limits=UsageLimits(request_limit=steps + 2))
    return max(sent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--store", help="store directory (default: a temporary one)")
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        without = asyncio.run(run(args.store or tmp, args.steps, offload=False))
        with_ = asyncio.run(run(args.store or tmp, args.steps, offload=True))
    print(f"largest model input without offload: {without:>9,} chars")
    print(f"largest model input with offload:    {with_:>9,} chars  ({100 * with_ / without:.1f}%)")


if __name__ == "__main__":
    main()
