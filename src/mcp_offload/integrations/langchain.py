"""LangChain / LangGraph (`pip install 'mcp-offload[langgraph]'`): message conversion both ways, a middleware for
`langchain.agents.create_agent`, a `pre_model_hook` for LangGraph's prebuilt agent, and the five tools.

    from langchain.agents import create_agent
    from mcp_offload import AsyncCompactor
    from mcp_offload.integrations.langchain import OffloadMiddleware

    async with AsyncCompactor(session="my-agent") as compactor:
        agent = create_agent(model, tools=my_tools, middleware=[OffloadMiddleware(compactor)])  # adds the tools
        state = await agent.ainvoke({"messages": [("user", "Check the logs")]})

The middleware compacts what the model is about to see (`awrap_model_call`); the graph state keeps the original
messages, and the model gets the same bytes every turn (each result is decided once, in the session's decision
record, whatever objects carry it). Without
`create_agent`: `await offload_messages(compactor, messages)` returns compacted `BaseMessage`s, and
`offload_pre_model_hook(compactor)` is a `pre_model_hook` for `langgraph.prebuilt.create_react_agent`.

Conversion: each message goes to the OpenAI Chat format with langchain-core's own `convert_to_openai_messages`;
back, untouched messages are the very same objects, a stored `ToolMessage` is a copy with the reference text as
content (id, name, tool_call_id kept), and the note standing for older turns (only with a `context_window`) is a
`HumanMessage`. Agents are async here: the middleware has no sync path (use `ainvoke` / `astream`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, SystemMessage, convert_to_openai_messages
from langchain_core.tools import BaseTool, StructuredTool
from typing_extensions import Unpack

from mcp_offload.compact import AsyncCompactor
from mcp_offload.core.tools import TOOLS
from mcp_offload.integrations.chat_mapping import ChatMapping, Inserted, Kept
from mcp_offload.integrations.compact_options import CompactOptions


def to_chat(messages: Sequence[BaseMessage]) -> ChatMapping[int]:
    mapping: ChatMapping[int] = ChatMapping()
    for i, message in enumerate(messages):
        if not isinstance(message, BaseMessage):
            raise TypeError(f"message {i}: expected a LangChain BaseMessage, got {type(message).__name__}")
        mapping.add(convert_to_openai_messages(message), i)
    return mapping


def from_chat(messages: Sequence[BaseMessage], mapping: ChatMapping[int], handed_in: Any, compacted: Any) -> list[Any]:
    out: list[BaseMessage] = []
    for item in mapping.resolve(handed_in, compacted):
        if isinstance(item, Kept):
            out.append(messages[item.origin])
        elif isinstance(item, Inserted):
            out.append(SystemMessage(item.text) if item.role == "system" else HumanMessage(item.text))
        else:
            out.append(messages[item.origin].model_copy(update={"content": item.text}))
    return out


class OffloadMessages:
    """`await OffloadMessages(compactor)(messages)`: the messages with big tool results stored, as LangChain types."""

    def __init__(self, compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> None:
        self.compactor = compactor
        self.options = options

    async def __call__(self, messages: Sequence[BaseMessage]) -> list[AnyMessage]:
        mapping = to_chat(messages)
        compacted = await self.compactor.compact(mapping.messages, format="openai", **self.options)
        return from_chat(messages, mapping, mapping.messages, compacted)


async def offload_messages(
    compactor: AsyncCompactor, messages: Sequence[BaseMessage], **options: Unpack[CompactOptions]
) -> list[AnyMessage]:
    """One-off conversion (a long-lived loop should keep one `OffloadMessages`: it remembers what it stored)."""
    return await OffloadMessages(compactor, **options)(messages)


def offload_pre_model_hook(
    compactor: AsyncCompactor, **options: Unpack[CompactOptions]
) -> Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]:
    """A `pre_model_hook` for `create_react_agent`: the model gets `llm_input_messages`, the state is kept."""
    offload = OffloadMessages(compactor, **options)

    async def hook(state: dict[str, Any]) -> dict[str, Any]:
        return {"llm_input_messages": await offload(state["messages"])}

    return hook


def offload_tools(compactor: AsyncCompactor) -> list[BaseTool]:
    """The five retrieval tools as LangChain `StructuredTool`s, answered in-process by `compactor.run_tool`."""

    def runner(name: str) -> Callable[..., Awaitable[str]]:
        async def run(**arguments: Any) -> str:
            return await compactor.run_tool(name, arguments)

        return run

    return [
        StructuredTool.from_function(
            coroutine=runner(s.name), name=s.name, description=s.description, args_schema=s.input_schema()
        )
        for s in TOOLS
    ]


class OffloadMiddleware(AgentMiddleware):
    """For `create_agent(middleware=[...])`: compacts each model call's messages and registers the five tools."""

    def __init__(self, compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> None:
        super().__init__()
        self.offload = OffloadMessages(compactor, **options)
        self.tools = offload_tools(compactor)

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any]:
        return await handler(request.override(messages=await self.offload(request.messages)))

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any]:
        raise RuntimeError(
            "OffloadMiddleware compacts with an AsyncCompactor: run the agent with ainvoke() or astream(), "
            "not invoke() or stream()"
        )
