"""openai-agents (`pip install 'mcp-offload[openai-agents]'`): compact what the model sees, and give it the tools.

    from agents import Agent, RunConfig, Runner
    from mcp_offload import AsyncCompactor
    from mcp_offload.integrations.openai_agents import offload_input_filter, offload_tools

    async with AsyncCompactor(session="my-agent") as compactor:
        agent = Agent(name="ops", tools=[*my_tools, *offload_tools(compactor)])
        config = RunConfig(call_model_input_filter=offload_input_filter(compactor))
        result = await Runner.run(agent, "Check the logs", run_config=config)

The filter runs before every model call (`RunConfig.call_model_input_filter`): the run's items are Responses API
input items, compacted like any Responses list (big `function_call_output`s become a reference plus a preview).
The run's own history keeps the originals; the model sees the compacted list, and the same bytes every turn (each
result is decided once, in the session's decision record, however often the run rebuilds its items). The tools
answer in-process, exactly as the MCP server would.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, cast

from typing_extensions import Unpack

from mcp_offload.compact import AsyncCompactor
from mcp_offload.core.tools import TOOLS
from mcp_offload.integrations.compact_options import CompactOptions

if TYPE_CHECKING:
    from agents import FunctionTool, TResponseInputItem
    from agents.run_config import CallModelData, ModelInputData
    from agents.tool_context import ToolContext


class OffloadInputFilter:
    """A `call_model_input_filter`: the items the model is about to see, compacted."""

    def __init__(self, compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> None:
        self.compactor = compactor
        self.options = options

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        from agents.run_config import ModelInputData

        compacted = await self.compactor.compact(data.model_data.input, format="responses", **self.options)
        return ModelInputData(
            input=cast("list[TResponseInputItem]", compacted), instructions=data.model_data.instructions
        )


def offload_input_filter(compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> OffloadInputFilter:
    """The filter for `RunConfig(call_model_input_filter=...)`; `options` as for `compact()`."""
    return OffloadInputFilter(compactor, **options)


def offload_tools(compactor: AsyncCompactor) -> list[FunctionTool]:
    """The five retrieval tools as `FunctionTool`s, answered in-process by `compactor.run_tool`."""
    from agents import FunctionTool

    def invoker(name: str) -> Any:
        async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
            try:
                parsed = json.loads(arguments) if arguments.strip() else {}
            except ValueError as exc:
                return f"The arguments of {name} are not valid JSON ({exc}). Send a JSON object."
            if not isinstance(parsed, dict):
                return f"The arguments of {name} must be a JSON object, got {type(parsed).__name__}."
            return await compactor.run_tool(name, parsed)

        return invoke

    return [
        FunctionTool(
            name=spec.name,
            description=spec.description,
            params_json_schema=spec.input_schema(),
            on_invoke_tool=invoker(spec.name),
            strict_json_schema=False,  # the tools' schemas have optional fields, which strict mode cannot express
        )
        for spec in TOOLS
    ]
