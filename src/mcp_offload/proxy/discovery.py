"""Progressive tool discovery (`--lazy-tools`): three small tools instead of every upstream schema up front.

Hundreds of upstream tools can cost tens of thousands of tokens of schema before the first prompt. In lazy mode
the client sees `search_tools` (find a tool by keywords), `describe_tool` (its full schema) and `call_tool` (call
it by name); results still go through the offload policy. The namespaced names also stay callable directly, so a
model that already knows a name loses nothing.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import mcp.types as types
from mcp.server import ServerRequestContext
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mcp_offload.tools import ToolCall, error_result

if TYPE_CHECKING:
    from mcp_offload.proxy.router import ProxyRouter, Route

SEARCH = "search_tools"
DESCRIBE = "describe_tool"
CALL = "call_tool"
MAX_RESULTS = 50
_WORD = re.compile(r"[a-z0-9]+")


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SearchArgs(_Args):
    query: str = Field(description="Keywords, e.g. 'read file' or 'git diff'. Empty lists every tool name.")
    limit: int = Field(default=10, ge=1, le=MAX_RESULTS, description="Tools to return (1-50).")


class DescribeArgs(_Args):
    name: str = Field(description="A tool name from search_tools, e.g. 'fs__read_text_file'.")


class CallArgs(_Args):
    name: str = Field(description="A tool name from search_tools.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="The tool's arguments (see describe_tool).")


def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    return schema


_TOOLS = {
    SEARCH: types.Tool(
        name=SEARCH,
        title="Find a tool",
        description=(
            "Search the tools of the MCP servers behind this proxy by keywords (name and description). Returns "
            "names with one-line descriptions; then describe_tool for the schema, and call_tool to run it.\n"
            'Example: search_tools(query="read file") → "fs__read_text_file — Read the complete contents of a file…".'
        ),
        input_schema=_schema(SearchArgs),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    DESCRIBE: types.Tool(
        name=DESCRIBE,
        title="Describe a tool",
        description="Full description and input schema (JSON Schema) of one tool found with search_tools.",
        input_schema=_schema(DescribeArgs),
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    CALL: types.Tool(
        name=CALL,
        title="Call a tool",
        description=(
            "Call a tool found with search_tools, with arguments matching its describe_tool schema. Large results "
            "come back as a stored-output handle to read, search or query.\n"
            'Example: call_tool(name="fs__read_text_file", arguments={"path": "/data/log.txt"}).'
        ),
        input_schema=_schema(CallArgs),
    ),
}


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("_", " "))


class LazyTools:
    names = frozenset(_TOOLS)

    def __init__(self, router: ProxyRouter) -> None:
        self.router = router

    def tools(self) -> list[types.Tool]:
        return list(_TOOLS.values())

    def input_schema(self, name: str) -> dict[str, Any] | None:
        tool = _TOOLS.get(name)
        return tool.input_schema if tool is not None else None

    async def call(
        self, ctx: ServerRequestContext[Any], call: ToolCall, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult:
        try:
            if name == SEARCH:
                return await self._search(SearchArgs.model_validate(arguments or {}))
            if name == DESCRIBE:
                return await self._describe(DescribeArgs.model_validate(arguments or {}))
            args = CallArgs.model_validate(arguments or {})
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()[:5]
            )
            return error_result(f"Invalid arguments for {name}: {problems}")
        route = await self._route(args.name)
        if isinstance(route, types.CallToolResult):
            return route
        return await self.router.forward(ctx, call, route, args.arguments)

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
