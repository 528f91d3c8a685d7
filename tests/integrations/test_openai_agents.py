"""openai-agents with the offload input filter and tools: a real `Runner` and a real `OpenAIChatCompletionsModel` /
`OpenAIResponsesModel` (the openai SDK client) against the scripted loopback upstream, 30 planted facts in ~100 KB
tool results, each found again through `search_large_output` while every request stays small."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, Model, OpenAIChatCompletionsModel, OpenAIResponsesModel, RunConfig, Runner
from agents.tool_context import ToolContext
from openai import AsyncOpenAI

from llm_upstream import Turn, UpstreamServer, extends, reply, tool_call
from mcp_offload import AsyncCompactor
from mcp_offload.integrations.openai_agents import offload_input_filter, offload_tools
from support.planted_facts import FACTS, Exchange, big_report, next_step, recovered_all


def scripted(turn: Turn) -> Any:
    exchanges = [Exchange(e.name, e.arguments or {}, e.result or "") for e in turn.exchanges()]
    step = next_step(exchanges)
    return reply(step.text) if step.tool is None else reply(tool_call(step.tool, step.arguments))


async def fetch_report(ctx: ToolContext[Any], arguments: str) -> str:
    return big_report(int(json.loads(arguments)["n"]))


FETCH = FunctionTool(
    name="fetch_report",
    description="Fetch report n.",
    params_json_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    on_invoke_tool=fetch_report,
    strict_json_schema=False,
)


@pytest.mark.parametrize("api", ["openai_chat", "responses"])
async def test_thirty_planted_facts_come_back_and_requests_stay_small(api: str, tmp_path: Path) -> None:
    with UpstreamServer(scripted) as upstream:
        client = AsyncOpenAI(base_url=upstream.openai_url, api_key="test-key")
        model: Model = (
            OpenAIChatCompletionsModel("gpt-test", openai_client=client)
            if api == "openai_chat"
            else OpenAIResponsesModel("gpt-test", openai_client=client)
        )
        async with AsyncCompactor(store=str(tmp_path / "store"), session="agents-test") as compactor:
            agent = Agent(
                name="ops", instructions="Check reports.", model=model, tools=[FETCH, *offload_tools(compactor)]
            )
            config = RunConfig(call_model_input_filter=offload_input_filter(compactor), tracing_disabled=True)
            result = await Runner.run(agent, "Find every code.", run_config=config, max_turns=2 * FACTS + 5)
            stored = len(compactor.last_report.offloaded) if compactor.last_report else 0
        requests = upstream.received(api, ok_only=True)  # type: ignore[arg-type]
    assert recovered_all(str(result.final_output)) == []
    assert len(requests) == 2 * FACTS + 1
    raw = FACTS * len(big_report(0))
    sizes = [len(json.dumps(r.body)) for r in requests]
    assert max(sizes) < raw / 30, sizes  # the last request holds all 30 references, not 3 MB of reports
    assert (sizes[-1] - sizes[0]) / FACTS < 3_000, sizes  # per report: its reference + preview and one search hit
    assert stored <= 1  # the last compaction stored at most the newest report: earlier ones were stored once
    breaks = [i for i in range(1, len(requests)) if not extends(api, requests[i - 1].body, requests[i].body)]
    assert breaks == []  # each request starts with the previous one byte for byte: the provider's cache holds


async def test_tools_answer_bad_arguments_with_a_message(tmp_path: Path) -> None:
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        search = next(t for t in offload_tools(compactor) if t.name == "search_large_output")
        text = await search.on_invoke_tool(None, "{not json")  # type: ignore[arg-type]
        assert "not valid JSON" in text
        text = await search.on_invoke_tool(None, "[1]")  # type: ignore[arg-type]
        assert "must be a JSON object" in text
