"""pydantic-ai (`pip install 'mcp-offload[pydantic-ai]'`): a history-processing capability and the five tools.

    from pydantic_ai import Agent
    from mcp_offload import AsyncCompactor
    from mcp_offload.integrations.pydantic_ai import offload_history, offload_tools

    async with AsyncCompactor(session="my-agent") as compactor:
        agent = Agent(model, capabilities=[offload_history(compactor)], tools=[*my_tools, *offload_tools(compactor)])
        result = await agent.run("Check the logs")

`offload_history` is pydantic-ai's own `ProcessHistory` capability around `OffloadHistory`, which is also usable as
a plain `history_processors=[OffloadHistory(compactor)]` entry. Before every model request it converts the
`ModelMessage`s to OpenAI Chat dicts (one per request part; one per response), compacts them, and maps the result
back: untouched messages are returned as the very same objects, a stored tool return keeps its part (tool name,
call id, metadata) with the reference text as content, and older turns moved into a transcript (only with a
`context_window`) leave their note as a `UserPromptPart`. pydantic-ai keeps the processed history, so a result is
stored once and its reference is what later turns carry.

This module imports pydantic-ai (which resolves annotations at run time); `import mcp_offload` does not.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.tools import Tool
from typing_extensions import Unpack

from mcp_offload.compact import AsyncCompactor
from mcp_offload.core.tools import TOOLS
from mcp_offload.integrations.chat_mapping import ChatMapping, Inserted, Kept, Replaced
from mcp_offload.integrations.compact_options import CompactOptions

PartOrigin = tuple[int, int | None]  # (message index, request part index; None: the whole response)


def _user_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(item if isinstance(item, str) else f"[{type(item).__name__}]" for item in content)
    return str(content)


def to_chat(messages: Sequence[ModelMessage]) -> ChatMapping[PartOrigin]:
    """OpenAI Chat dicts for `messages`, each recorded with the message (part) it stands for."""
    mapping: ChatMapping[PartOrigin] = ChatMapping()
    for i, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            for j, part in enumerate(message.parts):
                chat: dict[str, Any]
                if type(part) is ToolReturnPart:
                    content = part.content if isinstance(part.content, str) else part.model_response_str()
                    chat = {"role": "tool", "tool_call_id": part.tool_call_id, "content": content}
                elif isinstance(part, ToolReturnPart):  # a typed return (tool search, capability load): kept
                    chat = {"role": "tool", "tool_call_id": part.tool_call_id, "content": ""}
                elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                    chat = {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
                elif isinstance(part, RetryPromptPart):
                    chat = {"role": "user", "content": part.model_response()}
                elif isinstance(part, SystemPromptPart):
                    chat = {"role": "system", "content": part.content}
                elif isinstance(part, UserPromptPart):
                    chat = {"role": "user", "content": _user_text(part.content)}
                else:
                    chat = {"role": "user", "content": ""}  # a part kind this adapter does not read: kept as is
                mapping.add(chat, (i, j))
        else:
            text = "\n".join(p.content for p in message.parts if isinstance(p, TextPart))
            calls = [
                {
                    "id": p.tool_call_id,
                    "type": "function",
                    "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
                }
                for p in message.parts
                if isinstance(p, ToolCallPart)
            ]
            mapping.add({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})}, (i, None))
    return mapping


def from_chat(
    messages: Sequence[ModelMessage], resolved: Sequence[Kept[PartOrigin] | Replaced[PartOrigin] | Inserted]
) -> list[ModelMessage]:
    """The messages the compacted chat list stands for: originals where untouched, stored tool returns replaced."""
    out: list[ModelMessage] = []
    current: int | None = None
    parts: list[ModelRequestPart] = []

    def flush() -> None:
        if current is None:
            return
        original = messages[current]
        untouched = isinstance(original, ModelRequest) and [id(p) for p in parts] == [id(p) for p in original.parts]
        if not isinstance(original, ModelRequest) or untouched:
            out.append(original)
        elif parts:
            out.append(dataclasses.replace(original, parts=list(parts)))

    for item in resolved:
        if isinstance(item, Inserted):
            flush()
            current, parts = None, []
            part: ModelRequestPart = SystemPromptPart(item.text) if item.role == "system" else UserPromptPart(item.text)
            out.append(ModelRequest(parts=[part]))
            continue
        index, part_index = item.origin
        if index != current:
            flush()
            current, parts = index, []
        if part_index is None:
            continue
        original = messages[index]
        assert isinstance(original, ModelRequest)
        found = original.parts[part_index]
        if isinstance(item, Replaced) and type(found) is ToolReturnPart:
            found = dataclasses.replace(cast("ToolReturnPart[Any]", found), content=item.text)  # exactly that type
        parts.append(found)
    flush()
    return out


class OffloadHistory:
    """A pydantic-ai history processor: big tool returns stored, the model sees references and previews."""

    def __init__(self, compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> None:
        self.compactor = compactor
        self.options = options

    async def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        mapping = to_chat(messages)
        compacted = await self.compactor.compact(mapping.messages, format="openai", **self.options)
        return from_chat(messages, mapping.resolve(mapping.messages, compacted))


def offload_history(compactor: AsyncCompactor, **options: Unpack[CompactOptions]) -> ProcessHistory[Any]:
    """The capability for `Agent(capabilities=[...])`; `options` as for `compact()`."""
    return ProcessHistory(OffloadHistory(compactor, **options))


def offload_tools(compactor: AsyncCompactor) -> list[Tool[Any]]:
    """The five retrieval tools as pydantic-ai `Tool`s, answered in-process by `compactor.run_tool`."""

    def runner(name: str) -> Any:
        async def run(**arguments: Any) -> str:
            return await compactor.run_tool(name, arguments)

        return run

    return [Tool.from_schema(runner(s.name), s.name, s.description, s.input_schema()) for s in TOOLS]
