"""Progressive tool discovery (`--lazy-tools`): three small tools instead of every upstream schema up front.

Hundreds of upstream tools can cost tens of thousands of tokens of schema before the first prompt. In lazy mode
the client sees `search_tools` (find a tool by keywords), `describe_tool` (its full schema) and `call_tool` (call
it by name); results still go through the offload policy. The namespaced names also stay callable directly, so a
model that already knows a name loses nothing.

`LazyTools` is a layer around the `ProxyRouter`: it lists its three tools (and proxy_status) instead of the
router's catalog, answers them, and hands everything else to the router. The three are `ToolSpec`s, like our core
tools: their arguments are validated by the core pipeline (`core/pipeline.py`), the one validation path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import mcp.types as types
from mcp.server import ServerRequestContext
from pydantic import BaseModel, Field

from mcp_offload.core.pipeline import ToolAnswer, guarded, parse_arguments
from mcp_offload.core.tools import CallContext, ToolArgs, ToolReply, ToolSpec
from mcp_offload.mcp_server.change_notifier import ListChanged
from mcp_offload.mcp_server.extension import Extension, NextTool
from mcp_offload.mcp_server.tools import error_result, result_to_mcp, tool_of
from mcp_offload.proxy.names import Route
from mcp_offload.proxy.router import STATUS_TOOL_DEF, ProxyRouter

SEARCH = "search_tools"
DESCRIBE = "describe_tool"
CALL = "call_tool"
MAX_RESULTS = 50
_WORD = re.compile(r"[a-z0-9]+")


class SearchArgs(ToolArgs):
    query: str = Field(description="Keywords, e.g. 'read file' or 'git diff'. Empty lists every tool name.")
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS, description="Tools to return (1-50).")


class DescribeArgs(ToolArgs):
    name: str = Field(description="A tool name from search_tools, e.g. 'fs__read_text_file'.")


class CallArgs(ToolArgs):
    name: str = Field(description="A tool name from search_tools.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (see describe_tool).")


class _Unused(BaseModel):
    """The output model of the specs: unused, the lazy tools answer with whole results (see `LazyTools._run`)."""


async def _unbound(call: CallContext, args: Any) -> ToolReply:
    raise RuntimeError("lazy tool specs run through LazyTools._run")


def _spec(name: str, title: str, description: str, args: type[ToolArgs], *, read_only: bool) -> ToolSpec:
    return ToolSpec(
        name=name,
        title=title,
        description=description,
        args=args,
        output=_Unused,
        handler=_unbound,
        read_only=read_only,
    )


SPECS = {
    SEARCH: _spec(
        SEARCH,
        "Find a tool",
        "Search the tools of the MCP servers behind this proxy by keywords (name and description). Returns "
        "names with one-line descriptions; then describe_tool for the schema, and call_tool to run it.\n"
        'Example: search_tools(query="read file") → "fs__read_text_file — Read the complete contents of a file…".',
        SearchArgs,
        read_only=True,
    ),
    DESCRIBE: _spec(
        DESCRIBE,
        "Describe a tool",
        "Full description and input schema (JSON Schema) of one tool found with search_tools.",
        DescribeArgs,
        read_only=True,
    ),
    CALL: _spec(
        CALL,
        "Call a tool",
        "Call a tool found with search_tools, with arguments matching its describe_tool schema. Large results "
        "come back as a stored-output handle to read, search or query.\n"
        'Example: call_tool(name="fs__read_text_file", arguments={"path": "/data/log.txt"}).',
        CallArgs,
        read_only=False,
    ),
}


def _listed(spec: ToolSpec) -> types.Tool:
    """As listed: the spec's name, title, description and input schema; no output schema (the answers are free
    text or an upstream's result), and only the hints that hold (calling a tool may do anything)."""
    annotations = types.ToolAnnotations(read_only_hint=True, open_world_hint=False) if spec.read_only else None
    tool = tool_of(spec)
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=annotations,
    )


_TOOLS = {name: _listed(spec) for name, spec in SPECS.items()}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("_", " "))


class _WithoutToolChanges:
    """The lazy tool set itself never changes: upstream tool changes are not news to the client."""

    def __init__(self, notifier: ListChanged) -> None:
        self._notifier = notifier

    async def changed(self, *, tools: bool = False, resources: bool = False, prompts: bool = False) -> None:
        await self._notifier.changed(tools=False, resources=resources, prompts=prompts)


class LazyTools(Extension):
    """The router behind three discovery tools. Pass this (not the router) to `build_server`."""

    names = frozenset(SPECS)

    def __init__(self, router: ProxyRouter) -> None:
        self.router = router

    # -- our three tools ---------------------------------------------------------------------------------------
    async def list_tools(self) -> list[types.Tool]:
        await self.router.settle()
        return [STATUS_TOOL_DEF, *_TOOLS.values()]

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = _TOOLS.get(name)
        return tool.input_schema if tool is not None else self.router.input_schema(name)

    async def call_tool(
        self, ctx: ServerRequestContext[Any], call: CallContext, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | None:
        if name == SEARCH:
            return await self._run(SPECS[SEARCH], call, arguments, self._search)
        if name == DESCRIBE:
            return await self._run(SPECS[DESCRIBE], call, arguments, self._describe)
        if name == CALL:

            async def forward(args: CallArgs) -> types.CallToolResult:
                route = await self._route(args.name)
                if isinstance(route, types.CallToolResult):
                    return route
                return await self.router.forward(call, route, args.arguments)

            return await self._run(SPECS[CALL], call, arguments, forward)
        return await self.router.call_tool(ctx, call, name, arguments)

    @staticmethod
    async def _run(
        spec: ToolSpec,
        call: CallContext,
        arguments: dict[str, Any] | None,
        answer: Callable[[Any], Awaitable[types.CallToolResult]],
    ) -> types.CallToolResult:
        """Validate and run through the core pipeline (one validation path, one error translation), with `answer`
        (which needs this request's context) in place of the spec's handler; its whole result is passed on as it is."""
        args = parse_arguments(spec, arguments)
        with_meta = not call.cap.raw_json
        if isinstance(args, ToolAnswer):
            return result_to_mcp(args, with_meta=with_meta)
        result = await guarded(spec.name, call, lambda: answer(args))
        return result_to_mcp(result, with_meta=with_meta) if isinstance(result, ToolAnswer) else result

    # -- the router's, unchanged ---------------------------------------------------------------------------------
    def bind(self, notifier: ListChanged) -> None:
        self.router.bind(_WithoutToolChanges(notifier))

    async def intercept_tool(
        self, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
    ) -> types.CallToolResult:
        return await self.router.intercept_tool(call, name, arguments, call_next)

    async def list_resources(self) -> list[types.Resource]:
        return await self.router.list_resources()

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return await self.router.list_resource_templates()

    async def read_resource(self, ctx: ServerRequestContext[Any], uri: str) -> types.ReadResourceResult | None:
        return await self.router.read_resource(ctx, uri)

    async def list_prompts(self) -> list[types.Prompt]:
        return await self.router.list_prompts()

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult | None:
        return await self.router.get_prompt(ctx, name, arguments)

    # -- answers -----------------------------------------------------------------------------------------------
    async def _route(self, name: str) -> Route | types.CallToolResult:
        await self.router.settle()
        route = self.router.table().tools.get(name)
        if route is None:
            return self.router.unavailable_error(name) or error_result(
                f"No tool named {name!r} behind this proxy. Find names with search_tools."
            )
        return route

    async def _search(self, args: SearchArgs) -> types.CallToolResult:
        await self.router.settle()
        table = self.router.table()
        terms = _words(args.query)
        scored: list[tuple[float, str, types.Tool]] = []
        for public, route in table.tools.items():
            tool = route.tool
            if tool is None:
                continue
            name_words = set(_words(public))
            title_words = set(_words(tool.title or ""))
            text_words = _words(tool.description or "")
            score = 0.0
            for term in terms:
                score += 3 * (term in name_words) + 2 * (term in title_words) + min(text_words.count(term), 3)
                score += 0.5 * any(w.startswith(term) for w in name_words if w != term)
            if score > 0 or not terms:
                scored.append((score, public, tool))
        scored.sort(key=lambda item: (-item[0], item[1]))
        hits = scored[: args.limit]
        if not hits:
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=f"No tool matches {args.query!r}; try other words.")]
            )
        lines = [f"{len(scored)} tool(s) match; showing {len(hits)}:"]
        for _, public, tool in hits:
            summary = (tool.description or tool.title or "").strip().split("\n", 1)[0][:160]
            lines.append(f"- {public} — {summary}")
        lines.append("Next: describe_tool(name=…) for the schema, then call_tool(name=…, arguments={…}).")
        return types.CallToolResult(content=[types.TextContent(type="text", text="\n".join(lines))])

    async def _describe(self, args: DescribeArgs) -> types.CallToolResult:
        route = await self._route(args.name)
        if isinstance(route, types.CallToolResult):
            return route
        tool = route.tool
        assert tool is not None
        info: dict[str, Any] = {
            "name": route.public,
            "server": route.upstream.name,
            "title": tool.title,
            "description": tool.description,
            "inputSchema": tool.input_schema,
        }
        if tool.annotations is not None:
            info["annotations"] = tool.annotations.model_dump(by_alias=True, exclude_none=True)
        if tool.output_schema is not None:
            info["outputSchema"] = tool.output_schema
            info["note"] = "Large results are stored and replaced by a reference, without this structure."
        text = json.dumps(info, ensure_ascii=False, indent=1)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
