"""LangChain `create_agent` with mcp-offload, offline: the middleware compacts tool results, its tools read back.

langchain-core's `GenericFakeChatModel` stands in for a real chat model (swap in `ChatOpenAI(model="gpt-…")` or
any chat model for a real run; the fake one only gains the `bind_tools` every real one has). It fetches a
~15k-token log per step, and every third step searches the stored logs with `search_large_output`. The agent's own
code is the marked line. Prints what the model was sent with and without the middleware.

    python examples/langchain_offload.py [--store DIR] [--steps 12]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from mcp_offload import AsyncCompactor
from mcp_offload.integrations.langchain import OffloadMiddleware


@tool
def fetch_logs(service: str) -> str:
    """Fetch a service's logs (~15k tokens)."""
    lines = [f"2026-11-21T10:{i % 60:02d}:00Z INFO {service}: request {i * 7919 % 10**6} ok" for i in range(1500)]
    lines[777] = f"2026-11-21T10:57:00Z ERROR {service}: upstream timeout"
    return "\n".join(lines)


class ScriptedChatModel(GenericFakeChatModel):
    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools])


def script(steps: int) -> Iterator[AIMessage]:
    for step in range(1, steps + 1):
        arguments: dict[str, Any] = {"service": f"svc-{step}"}
        name = "fetch_logs"
        if step % 3 == 0:
            name, arguments = "search_large_output", {"pattern": "ERROR", "max_results": 5}
        yield AIMessage("", tool_calls=[{"id": f"call_{step}", "name": name, "args": arguments}])
    yield AIMessage("Checked; svc timeouts found.")


class InputSizes(BaseCallbackHandler):
    def __init__(self) -> None:
        self.sent: list[int] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.sent.append(sum(len(str(m.content)) for m in messages[0]))


async def run(store: str, steps: int, offload: bool) -> int:
    sizes = InputSizes()
    async with AsyncCompactor(store=store, session="langchain-example") as compactor:
        middleware: list[AgentMiddleware[Any, Any, Any]] = [OffloadMiddleware(compactor)]  # + middleware (+ tools)
        tools: list[BaseTool] = [fetch_logs]
        if not offload:
            tools, middleware = [fetch_logs, *middleware[0].tools], []
        agent = create_agent(ScriptedChatModel(messages=script(steps)), tools=tools, middleware=middleware)
        await agent.ainvoke(
            {"messages": [HumanMessage("Check all services.")]},
            {"callbacks": [sizes], "recursion_limit": 4 * steps + 10},
        )
    return max(sizes.sent)


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
