"""openai-agents with mcp-offload, offline: the input filter compacts what the model sees, the tools read it back.

A scripted `Model` stands in for OpenAI (swap in `OpenAIResponsesModel("gpt-…")` for a real run): it fetches a
~15k-token log per step, and every third step searches the stored logs with `search_large_output`. The agent's
own code is the two marked lines. Prints what the model was sent with and without the filter.

    python examples/openai_agents_offload.py [--store DIR] [--steps 12]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, RunConfig, Runner, Usage, function_tool
from agents.items import TResponseInputItem, TResponseStreamEvent
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from mcp_offload import AsyncCompactor
from mcp_offload.integrations.openai_agents import offload_input_filter, offload_tools


@function_tool
def fetch_logs(service: str) -> str:
    """Fetch a service's logs (~15k tokens)."""
    lines = [f"2026-11-21T10:{i % 60:02d}:00Z INFO {service}: request {i * 7919 % 10**6} ok" for i in range(1500)]
    lines[777] = f"2026-11-21T10:57:00Z ERROR {service}: upstream timeout"
    return "\n".join(lines)


class ScriptedModel(Model):
    """Answers from a script and records the size of every input it gets."""

    def __init__(self, steps: int) -> None:
        self.steps, self.calls, self.sent = steps, 0, [0]

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem], *args: Any, **kwargs: Any
    ) -> ModelResponse:
        self.sent.append(len(json.dumps(input)))
        self.calls += 1
        step = self.calls
        if step > self.steps:
            text = ResponseOutputText(type="output_text", text="Checked; svc timeouts found.", annotations=[])
            done = ResponseOutputMessage(type="message", id="m", role="assistant", status="completed", content=[text])
            return ModelResponse(output=[done], usage=Usage(), response_id=None)
        arguments: dict[str, Any] = {"service": f"svc-{step}"}
        name = "fetch_logs"
        if step % 3 == 0:
            name, arguments = "search_large_output", {"pattern": "ERROR", "max_results": 5}
        call = ResponseFunctionToolCall(
            type="function_call", call_id=f"call_{step}", name=name, arguments=json.dumps(arguments)
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("this example runs without streaming")


async def run(store: str, steps: int, offload: bool) -> int:
    model = ScriptedModel(steps)
    async with AsyncCompactor(store=store, session="agents-example") as compactor:
        agent = Agent(name="ops", model=model, tools=[fetch_logs, *offload_tools(compactor)])  # + the tools
        config = RunConfig(tracing_disabled=True)
        if offload:
            config = RunConfig(
                tracing_disabled=True, call_model_input_filter=offload_input_filter(compactor)
            )  # + filter
        await Runner.run(agent, "Check all services.", run_config=config, max_turns=steps + 2)
    return max(model.sent)


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
