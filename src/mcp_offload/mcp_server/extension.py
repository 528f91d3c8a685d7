"""The server's extension seam: what may add tools, resources and prompts beside ours (the proxy), and wrap our
own tool calls.

Shaped like the `mcp` SDK's own `mcp.server.extension.Extension`: a narrow base class whose methods all have
do-nothing defaults, so an extension overrides only what it provides, and one tool-call interceptor
(`intercept_tool`, first extension outermost). `Extensions` fans one call out to several, so `build_server`
talks to a single extension object.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp.types as types
from mcp.server import ServerRequestContext

from mcp_offload.core.tools import CallContext
from mcp_offload.mcp_server.change_notifier import ListChanged

NextTool = Callable[[], Awaitable[types.CallToolResult]]  # runs the rest of the chain and our tool


class Extension:
    """Adds tools/resources/prompts beside ours. Override only what you provide: every default adds nothing."""

    def bind(self, notifier: ListChanged) -> None:
        """Called once by build_server: how to tell this server's clients that the lists changed."""

    async def list_tools(self) -> list[types.Tool]:
        return []

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The input schema of one of your tools (2026-07-28 HTTP validates Mcp-Param headers with it)."""
        return None

    async def call_tool(
        self, ctx: ServerRequestContext[Any], call: CallContext, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | None:
        """Handle the call if `name` is one of your tools, else return None."""
        return None

    async def intercept_tool(
        self, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
    ) -> types.CallToolResult:
        """Wrap a call of one of *our* tools (offload, read_large_output, …): observe it, or answer instead.
        `call_next()` runs the rest of the chain and the tool. Default: pass through."""
        return await call_next()

    async def list_resources(self) -> list[types.Resource]:
        return []

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return []

    async def read_resource(self, ctx: ServerRequestContext[Any], uri: str) -> types.ReadResourceResult | None:
        """Read `uri` if it is yours, else return None."""
        return None

    async def list_prompts(self) -> list[types.Prompt]:
        return []

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult | None:
        """Get the prompt if `name` is yours, else return None."""
        return None


class Extensions(Extension):
    """Several extensions as one: lists are concatenated in order, the first that answers a name or URI wins,
    and interceptors nest (the first extension outermost)."""

    def __init__(self, extensions: Sequence[Extension] = ()) -> None:
        self.extensions = tuple(extensions)

    def bind(self, notifier: ListChanged) -> None:
        for ext in self.extensions:
            ext.bind(notifier)

    async def list_tools(self) -> list[types.Tool]:
        return [tool for ext in self.extensions for tool in await ext.list_tools()]

    def input_schema(self, name: str) -> dict[str, Any] | None:
        return next((s for ext in self.extensions if (s := ext.input_schema(name)) is not None), None)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], call: CallContext, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | None:
        for ext in self.extensions:
            result = await ext.call_tool(ctx, call, name, arguments)
            if result is not None:
                return result
        return None

    async def intercept_tool(
        self, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
    ) -> types.CallToolResult:
        chain = call_next
        for ext in reversed(self.extensions):
            chain = _bound(ext, call, name, arguments, chain)
        return await chain()

    async def list_resources(self) -> list[types.Resource]:
        return [res for ext in self.extensions for res in await ext.list_resources()]

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return [tpl for ext in self.extensions for tpl in await ext.list_resource_templates()]

    async def read_resource(self, ctx: ServerRequestContext[Any], uri: str) -> types.ReadResourceResult | None:
        for ext in self.extensions:
            result = await ext.read_resource(ctx, uri)
            if result is not None:
                return result
        return None

    async def list_prompts(self) -> list[types.Prompt]:
        return [prompt for ext in self.extensions for prompt in await ext.list_prompts()]

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult | None:
        for ext in self.extensions:
            result = await ext.get_prompt(ctx, name, arguments)
            if result is not None:
                return result
        return None


def _bound(
    ext: Extension, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
) -> NextTool:
    async def run() -> types.CallToolResult:
        return await ext.intercept_tool(call, name, arguments, call_next)

    return run
