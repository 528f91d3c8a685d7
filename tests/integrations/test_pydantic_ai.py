"""pydantic-ai with the offload capability and tools: a real `Agent` run by pydantic-ai's own `FunctionModel`,
30 planted facts in ~100 KB tool returns, each found again through `search_large_output`, while every request the
model gets stays small. Plus the conversion both ways on the framework's real message types."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from mcp_offload import AsyncCompactor
from mcp_offload.integrations.pydantic_ai import OffloadHistory, offload_history, offload_tools
from support.planted_facts import FACTS, Exchange, big_report, next_step, recovered_all


def exchanges_in(messages: list[ModelMessage]) -> list[Exchange]:
    calls: dict[str, ToolCallPart] = {}
    out: list[Exchange] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                calls[part.tool_call_id] = part
            elif isinstance(part, ToolReturnPart) and part.tool_call_id in calls:
                call = calls[part.tool_call_id]
                out.append(Exchange(call.tool_name, call.args_as_dict(), part.model_response_str()))
    return out


async def test_thirty_planted_facts_come_back_and_requests_stay_small(tmp_path: Path) -> None:
    seen: list[int] = []
    calls = 0

    def scripted(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal calls
        calls += 1
        seen.append(len(ModelMessagesTypeAdapter.dump_json(messages)))
        step = next_step(exchanges_in(messages))
        if step.tool is None:
            return ModelResponse(parts=[TextPart(step.text)])
        return ModelResponse(parts=[ToolCallPart(step.tool, step.arguments, tool_call_id=f"call_{calls:03d}")])

    def fetch_report(n: int) -> str:
        """Fetch report n."""
        return big_report(n)

    async with AsyncCompactor(store=str(tmp_path / "store"), session="pydantic-test") as compactor:
        agent = Agent(
            FunctionModel(scripted),
            capabilities=[offload_history(compactor)],
            tools=[fetch_report, *offload_tools(compactor)],
        )
        result = await agent.run("Find every code.", usage_limits=UsageLimits(request_limit=2 * FACTS + 5))
        history = result.all_messages()
    assert recovered_all(result.output) == []
    assert len(seen) == 2 * FACTS + 1
    raw = FACTS * len(big_report(0))
    assert max(seen) < raw / 15, seen  # the reports are references + previews
    assert (seen[-1] - seen[0]) / FACTS < 5_000, seen
    kept = [p for m in history for p in m.parts if isinstance(p, ToolReturnPart) and p.tool_name == "fetch_report"]
    assert len(kept) == FACTS and all(str(p.content).startswith("Stored as out_") for p in kept)  # stored once, kept


async def test_conversion_keeps_untouched_messages_and_replaces_big_returns(tmp_path: Path) -> None:
    big = big_report(7)
    messages: list[ModelMessage] = [
        ModelRequest(parts=[SystemPromptPart("be brief"), UserPromptPart("find it")]),
        ModelResponse(parts=[TextPart("fetching"), ToolCallPart("fetch_report", {"n": 7}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("fetch_report", big, tool_call_id="c1", metadata={"k": 1})]),
    ]
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        out = await OffloadHistory(compactor)(messages)
        assert out[0] is messages[0] and out[1] is messages[1]
        part = out[2].parts[0]
        assert isinstance(part, ToolReturnPart)
        assert isinstance(part.content, str) and part.content.startswith("Stored as out_")
        assert part.tool_call_id == "c1" and part.metadata == {"k": 1}
        handle = part.content.split()[2]
        assert "vault-" in await compactor.run_tool("search_large_output", {"handle": handle, "pattern": "FACT-07:"})
        again = await OffloadHistory(compactor)(out)  # already compacted: nothing changes, nothing stored again
        assert again[2] is out[2]


async def test_budget_mode_moves_older_turns_into_a_note(tmp_path: Path) -> None:
    messages: list[Any] = []
    for n in range(6):
        messages += [
            ModelRequest(parts=[UserPromptPart(f"question {n} " + "words " * 400)]),
            ModelResponse(parts=[TextPart(f"answer {n} " + "more " * 400)]),
        ]
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        out = await OffloadHistory(compactor, context_window=3_000)(messages)
    assert len(out) < len(messages)
    first = out[0]
    assert isinstance(first, ModelRequest) and isinstance(first.parts[0], UserPromptPart)
    assert "out_" in str(first.parts[0].content)  # the note names the stored transcript
    assert out[-1] is messages[-1]
