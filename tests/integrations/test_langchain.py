"""LangChain / LangGraph with the offload adapter: `create_agent` + `OffloadMiddleware` with a real `ChatOpenAI`
against the scripted loopback upstream, and LangGraph's prebuilt agent + `offload_pre_model_hook` with langchain-core's
own `GenericFakeChatModel`. 30 planted facts in ~100 KB tool results each come back through `search_large_output`
while every request the model gets stays small. Plus the conversion both ways, and a plain list refused clearly."""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langchain_openai import ChatOpenAI

from llm_upstream import Turn, UpstreamServer, extends, reply, tool_call
from mcp_offload import AsyncCompactor
from mcp_offload.integrations.langchain import (
    OffloadMessages,
    OffloadMiddleware,
    offload_pre_model_hook,
    offload_tools,
)
from support.planted_facts import FACTS, Exchange, big_report, next_step, recovered_all

LIMIT = {"recursion_limit": 8 * FACTS}  # LangGraph steps: hook, model and tools per model call


@tool
def fetch_report(n: int) -> str:
    """Fetch report n."""
    return big_report(n)


def scripted(turn: Turn) -> Any:
    exchanges = [Exchange(e.name, e.arguments or {}, e.result or "") for e in turn.exchanges()]
    step = next_step(exchanges)
    return reply(step.text) if step.tool is None else reply(tool_call(step.tool, step.arguments))


async def test_create_agent_with_the_middleware_and_chat_openai(tmp_path: Path) -> None:
    with UpstreamServer(scripted) as upstream:
        model = ChatOpenAI(model="gpt-test", base_url=upstream.openai_url, api_key="test-key")  # type: ignore[arg-type]
        async with AsyncCompactor(store=str(tmp_path / "store"), session="langchain-test") as compactor:
            agent = create_agent(model, tools=[fetch_report], middleware=[OffloadMiddleware(compactor)])
            state = await agent.ainvoke(
                {"messages": [HumanMessage("Find every code.")]}, {"recursion_limit": 8 * FACTS}
            )
        requests = upstream.received("openai_chat", ok_only=True)
    assert recovered_all(str(state["messages"][-1].content)) == []
    assert len(requests) == 2 * FACTS + 1
    sizes = [len(json.dumps(r.body["messages"])) for r in requests]
    assert max(sizes) < FACTS * len(big_report(0)) / 30, sizes
    assert (sizes[-1] - sizes[0]) / FACTS < 3_000, sizes
    breaks = [i for i in range(1, len(requests)) if not extends("openai_chat", requests[i - 1].body, requests[i].body)]
    assert breaks == []  # each request starts with the previous one byte for byte: the provider's cache holds
    reports = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.name == "fetch_report"]
    assert all(len(str(m.content)) > 100_000 for m in reports)  # the graph state keeps the originals


class LastInput(BaseCallbackHandler):
    """The messages the chat model was last called with (LangChain's own callback)."""

    def __init__(self) -> None:
        self.messages: list[BaseMessage] = []
        self.sizes: list[int] = []

    def on_chat_model_start(self, serialized: Any, messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.messages = messages[0]
        self.sizes.append(sum(len(str(m.content)) for m in self.messages))


def exchanges_in(messages: list[BaseMessage]) -> list[Exchange]:
    calls = {c["id"]: c for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    return [
        Exchange(calls[m.tool_call_id]["name"], calls[m.tool_call_id]["args"], str(m.content))
        for m in messages
        if isinstance(m, ToolMessage) and m.tool_call_id in calls
    ]


async def test_prebuilt_agent_with_the_pre_model_hook_and_generic_fake_chat_model(tmp_path: Path) -> None:
    from langgraph.prebuilt import create_react_agent

    recorder = LastInput()

    def answers() -> Iterator[AIMessage]:  # evaluated lazily: each answer reads what the model was just given
        n = 0
        while True:
            n += 1
            step = next_step(exchanges_in(recorder.messages))
            if step.tool is None:
                yield AIMessage(step.text)
                return
            yield AIMessage("", tool_calls=[{"id": f"call_{n:03d}", "name": step.tool, "args": step.arguments}])

    async with AsyncCompactor(store=str(tmp_path / "store"), session="langgraph-test") as compactor:
        tools = [fetch_report, *offload_tools(compactor)]
        model = GenericFakeChatModel(messages=answers()).bind(tools=[convert_to_openai_tool(t) for t in tools])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent is deprecated for create_agent; still supported
            agent = create_react_agent(model, tools, pre_model_hook=offload_pre_model_hook(compactor))
        config: Any = {**LIMIT, "callbacks": [recorder]}
        state = await agent.ainvoke({"messages": [HumanMessage("Find every code.")]}, config)
    assert recovered_all(str(state["messages"][-1].content)) == []
    assert len(recorder.sizes) == 2 * FACTS + 1
    assert max(recorder.sizes) < FACTS * len(big_report(0)) / 30, recorder.sizes


async def test_conversion_both_ways(tmp_path: Path) -> None:
    messages: list[BaseMessage] = [
        SystemMessage("be brief"),
        HumanMessage("find it"),
        AIMessage("", tool_calls=[{"id": "c1", "name": "fetch_report", "args": {"n": 3}}]),
        ToolMessage(big_report(3), tool_call_id="c1", name="fetch_report", id="tm-1"),
        AIMessage("found"),
    ]
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        offload = OffloadMessages(compactor, boundary="all")
        out = await offload(messages)
        again = await offload(messages)  # the same originals next turn: same bytes, nothing stored again
        report = compactor.last_report
    assert [type(m) for m in out] == [type(m) for m in messages]
    assert all(a is b for a, b in zip(out, messages, strict=True) if not isinstance(a, ToolMessage))
    stored = out[3]
    assert isinstance(stored, ToolMessage) and str(stored.content).startswith("Stored as out_")
    assert (stored.tool_call_id, stored.name, stored.id) == ("c1", "fetch_report", "tm-1")
    assert again[3].content == stored.content and report is not None and report.offloaded == []


async def test_plain_values_are_refused_with_a_clear_message(tmp_path: Path) -> None:
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        with pytest.raises(TypeError, match="message 0: expected a LangChain BaseMessage, got dict"):
            await OffloadMessages(compactor)([{"role": "user", "content": "hi"}])  # type: ignore[list-item]


async def test_the_compactor_names_the_adapter_when_given_langchain_messages(tmp_path: Path) -> None:
    messages = [HumanMessage("hi"), AIMessage("", tool_calls=[{"id": "c1", "name": "f", "args": {}}])]
    async with AsyncCompactor(store=str(tmp_path / "store")) as compactor:
        with pytest.raises(
            ValueError, match=r"message 0: a LangChain HumanMessage .* mcp_offload\.integrations\.langchain"
        ):
            await compactor.compact(messages)
        assert compactor.last_report is None  # refused before anything was read or stored


def test_import_mcp_offload_does_not_import_the_frameworks() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mcp_offload; from mcp_offload import Compactor; import mcp_offload.integrations; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('agents', 'pydantic_ai', 'langchain', "
        "'langchain_core', 'langgraph')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"


def test_a_sync_run_is_refused_with_the_async_calls_to_use(tmp_path: Path) -> None:
    async def make() -> AsyncCompactor:
        return AsyncCompactor(store=str(tmp_path / "store"))

    compactor = asyncio.run(make())
    model = GenericFakeChatModel(messages=iter([AIMessage("hi")]))
    agent = create_agent(model, middleware=[OffloadMiddleware(compactor)])
    with pytest.raises(RuntimeError, match=r"run the agent with ainvoke\(\) or astream\(\)"):
        agent.invoke({"messages": [HumanMessage("hi")]})
    asyncio.run(compactor.aclose())
