"""MCP wiring only: the low-level `Server` with our tools and resources, plus extension hooks for the proxy.

A low-level `Server` (not `MCPServer`) because the proxy adds upstream tools with their raw JSON Schemas at run
time; our own tools validate their arguments with pydantic in `tools.py`.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import mcp.types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from mcp_offload import __version__
from mcp_offload.errors import OffloadError
from mcp_offload.scope import MODERN_PROTOCOL, RunScope, Scope, ScopePolicy, new_scope
from mcp_offload.services import Services
from mcp_offload.store.handles import validate_handle
from mcp_offload.tools import TOOLS, TOOLS_BY_NAME, ToolCall, call_tool

log = logging.getLogger(__name__)

RESOURCE_PREFIX = "offload://outputs/"
RESOURCE_TEMPLATE = RESOURCE_PREFIX + "{handle}"

INSTRUCTIONS = """\
This server keeps large outputs out of the conversation, losslessly.
- When a text is large (more than a few thousand tokens: a big tool result, file, log or JSON), store it with \
offload and work from the handle and preview it returns.
- Pull back only what you need: search_large_output (regex or literal, one output or all) to find lines, \
read_large_output (character or line ranges, ~5,000 tokens per call) to read them, query_large_output (jq) to \
extract from JSON. list_outputs shows what is stored in this session.
- Results wrapped as "Stored as out_…" came from a large tool result that was offloaded automatically: use the \
same tools on that handle."""


class ChangeNotifier:
    """Tells connected clients that our tool/resource/prompt lists changed (the proxy relays upstream changes):
    handshake-era connections get a notification on their stream, 2026-07-28 clients through subscriptions/listen."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self._sessions: dict[object, Any] = {}  # per connection, not per request: one push per client

    def track(self, ctx: ServerRequestContext[Any]) -> None:
        if ctx.protocol_version == MODERN_PROTOCOL:
            return
        conn = ctx.session._connection  # no public accessor in mcp 2.3
        if conn not in self._sessions:
            self._sessions[conn] = ctx.session
            conn.exit_stack.callback(self._sessions.pop, conn, None)

    async def changed(self, *, tools: bool = False, resources: bool = False, prompts: bool = False) -> None:
        events = [
            (tools, ToolsListChanged(), "send_tool_list_changed"),
            (resources, ResourcesListChanged(), "send_resource_list_changed"),
            (prompts, PromptsListChanged(), "send_prompt_list_changed"),
        ]
        for wanted, event, method in events:
            if not wanted:
                continue
            await self.bus.publish(event)
            for session in list(self._sessions.values()):
                try:
                    await getattr(session, method)()
                except Exception:  # a client gone mid-push must not stop the others
                    log.debug("list_changed push failed", exc_info=True)


class Extension(Protocol):
    """Something that adds tools/resources/prompts beside ours (the proxy). All methods are optional in spirit:
    return empty lists / None for what you do not provide."""

    async def list_tools(self) -> list[types.Tool]: ...

    async def call_tool(
        self, ctx: ServerRequestContext[Any], call: ToolCall, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | None:
        """Handle the call if `name` is yours, else return None."""
        ...

    async def list_resources(self) -> list[types.Resource]: ...

    async def list_resource_templates(self) -> list[types.ResourceTemplate]: ...

    async def read_resource(self, ctx: ServerRequestContext[Any], uri: str) -> types.ReadResourceResult | None: ...

    async def list_prompts(self) -> list[types.Prompt]: ...

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult | None: ...

    def input_schema(self, name: str) -> dict[str, Any] | None: ...

    def bind(self, notifier: ChangeNotifier) -> None:
        """Called by build_server: how to tell this server's clients that the lists changed."""
        ...

    async def observe_tool_result(self, call: ToolCall, name: str, result: types.CallToolResult) -> None:
        """Called after each of our own tools ran (the proxy counts the tokens pulled back)."""
        ...


@dataclass(slots=True)
class RunState:
    """The lifespan context: what every request of one server run shares."""

    services: Services
    run_scope: str
    extensions: Sequence[Extension] = field(default_factory=tuple)


class OffloadServer(Server[RunState]):
    """Advertise list_changed for tools on every transport (the proxy relays upstream catalog changes)."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None, *a, **kw):  # type: ignore[no-untyped-def]
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True), *a, **kw
        )


def build_server(
    services: Services,
    *,
    scope_policy: ScopePolicy | None = None,
    extensions: Sequence[Extension] = (),
    name: str = "mcp-offload",
    session: str | None = None,
) -> OffloadServer:
    """The MCP server for one set of services. `scope_policy` decides a request's scope (see scope.py).

    `session`: the run scope is that named session's (shared with `Compactor(session=…)` and other processes
    naming it on the same store) instead of a fresh private one."""
    policy: ScopePolicy = scope_policy or RunScope()
    own_tools = [spec.to_tool() for spec in TOOLS]
    own_schemas = {tool.name: tool.input_schema for tool in own_tools}  # built once, not per 2026-07-28 call
    notifier = ChangeNotifier()
    for ext in extensions:
        ext.bind(notifier)

    @asynccontextmanager
    async def lifespan(_: Server[RunState]) -> AsyncIterator[RunState]:
        run_scope = Scope.named(session).key if session else new_scope()
        yield RunState(services=services, run_scope=run_scope, extensions=extensions)

    def scope_of(ctx: ServerRequestContext[RunState]) -> Scope:
        return policy(ctx, ctx.lifespan_context.run_scope)

    def tool_call(ctx: ServerRequestContext[RunState]) -> ToolCall:
        scope = scope_of(ctx)
        return ToolCall(services=services, scope=scope.key, enumerable=scope.enumerable)

    async def list_tools(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        notifier.track(ctx)
        tools = list(own_tools)
        for ext in extensions:
            tools.extend(await ext.list_tools())
        return types.ListToolsResult(tools=tools)

    async def handle_call(
        ctx: ServerRequestContext[RunState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        notifier.track(ctx)
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is not None:
            call = tool_call(ctx)
            result = await call_tool(spec, call, params.arguments)
            for ext in extensions:
                await ext.observe_tool_result(call, spec.name, result)
            return result
        call = tool_call(ctx)
        for ext in extensions:
            result = await ext.call_tool(ctx, call, params.name, params.arguments)
            if result is not None:
                return result
        known = ", ".join(sorted(TOOLS_BY_NAME))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=f"Unknown tool {params.name!r}. Tools here: {known}, …")],
            is_error=True,
        )

    async def list_resources(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        scope = scope_of(ctx)
        resources: list[types.Resource] = []
        if scope.enumerable:
            for meta in await services.store.list(scope.key):
                resources.append(
                    types.Resource(
                        uri=RESOURCE_PREFIX + meta.handle,
                        name=meta.name or meta.handle,
                        description=f"Offloaded {meta.kind} output ({meta.size:,} bytes, {meta.tokens:,} tokens)",
                        mime_type=meta.mime_type or _mime_of(meta.kind),
                        size=meta.size,
                    )
                )
        for ext in extensions:
            resources.extend(await ext.list_resources())
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [
            types.ResourceTemplate(
                uri_template=RESOURCE_TEMPLATE,
                name="offloaded-output",
                description="A stored output of this session, whole (use the tools to read parts of it).",
            )
        ]
        for ext in extensions:
            templates.extend(await ext.list_resource_templates())
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        ctx: ServerRequestContext[RunState], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri.startswith(RESOURCE_PREFIX):
            return await _read_output_resource(services, scope_of(ctx).key, uri)
        for ext in extensions:
            result = await ext.read_resource(ctx, uri)
            if result is not None:
                return result
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {uri[:200]!r}")

    async def list_prompts(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        prompts: list[types.Prompt] = []
        for ext in extensions:
            prompts.extend(await ext.list_prompts())
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(
        ctx: ServerRequestContext[RunState], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        for ext in extensions:
            result = await ext.get_prompt(ctx, params.name, params.arguments)
            if result is not None:
                return result
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name[:200]!r}")

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        if tool_name in own_schemas:
            return own_schemas[tool_name]
        for ext in extensions:
            schema = ext.input_schema(tool_name)
            if schema is not None:
                return schema
        return None

    return OffloadServer(
        name,
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=handle_call,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_subscriptions_listen=ListenHandler(notifier.bus),
    )


def _mime_of(kind: str) -> str:
    return {"json": "application/json", "jsonl": "application/x-ndjson"}.get(kind, "text/plain")


async def _read_output_resource(services: Services, scope: str, uri: str) -> types.ReadResourceResult:
    try:
        handle = validate_handle(uri[len(RESOURCE_PREFIX) :])
        async with services.store.open(scope, handle) as output:
            raw = output.read_bytes(0, output.meta.size)
            meta = output.meta
    except OffloadError as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None
    if meta.kind == "blob":
        blob = base64.b64encode(raw).decode("ascii")
        return types.ReadResourceResult(
            contents=[types.BlobResourceContents(uri=uri, mime_type=meta.mime_type, blob=blob)]
        )
    text = raw.decode("utf-8", "surrogatepass")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, mime_type=_mime_of(meta.kind), text=text)]
    )
