"""MCP wiring only: the low-level `Server` with our tools and resources, plus one `Extension` (the proxy) beside them.

A low-level `Server` (not `MCPServer`) because the proxy adds upstream tools with their raw JSON Schemas at run
time; our own tools validate their arguments with pydantic in `server/tools.py`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp.types as types
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from mcp.shared.exceptions import MCPError

from mcp_offload.core.output_uri import is_output_uri
from mcp_offload.core.outputs import SessionScope
from mcp_offload.core.services import Services
from mcp_offload.core.tools import TOOLS, TOOLS_BY_NAME, CallContext
from mcp_offload.errors import OffloadError
from mcp_offload.mcp_server.change_notifier import ChangeNotifier
from mcp_offload.mcp_server.client_caps import ClientCaps
from mcp_offload.mcp_server.extension import Extension, Extensions
from mcp_offload.mcp_server.resources import OUTPUT_TEMPLATE, read_output_resource, resource_of
from mcp_offload.mcp_server.savings_tap import SavingsTap
from mcp_offload.mcp_server.scoping import RunScope, ScopePolicy, new_scope
from mcp_offload.mcp_server.tools import call_tool, error_result, tool_of
from mcp_offload.version import __version__

__all__ = ["OffloadServer", "RequestWatcher", "build_server"]

# What a client puts in its system prompt (Claude Code: in the history, under a heading of its own), paid on every turn
# of every conversation: only what no tool description says, that a stored result is worked on by its handle; each
# tool's own description says how, and each reference names the tools that work on it.
INSTRUCTIONS = """\
A large result comes back as "Stored as out_…" with a preview: search, read or query it by that handle, losslessly."""


@dataclass(slots=True)
class RunState:
    """The lifespan context: what every request of one server run shares."""

    services: Services
    run_scope: str
    extension: Extension = field(default_factory=Extension)


RequestWatcher = Callable[[ServerRequestContext[RunState], CallContext], None]
"""Told of every tools/list and tools/call the server answers, with the call context it built for it (the stdio
front's shortcut learns the connection's era and client from it: serve/stdio_shortcut.py)."""


class OffloadServer(Server[RunState]):
    """Advertise list_changed for tools on every transport (the proxy relays upstream catalog changes)."""

    request_watchers: list[RequestWatcher]

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, resources_changed=True),
            experimental_capabilities,
            extensions,
        )


def build_server(
    services: Services,
    *,
    scope_policy: ScopePolicy | None = None,
    extensions: Sequence[Extension] = (),
    name: str = "mcp-offload",
    session: str | None = None,
) -> OffloadServer:
    """The MCP server for one set of services. `scope_policy` decides a request's scope (see server/scoping.py).

    `session`: the run scope is that named session's (shared with `Compactor(session=…)` and other processes
    naming it on the same store) instead of a fresh private one."""
    policy: ScopePolicy = scope_policy or RunScope()
    private = scope_policy is None and session is None  # one process, one fresh session: handles do not travel
    caps = ClientCaps(services.settings.client_caps)
    own_tools = [tool_of(spec) for spec in TOOLS]
    own_schemas = {tool.name: tool.input_schema for tool in own_tools}  # built once, not per 2026-07-28 call
    ext = Extensions([*extensions, SavingsTap(services.savings, services.tokens)])  # the tap innermost
    notifier = ChangeNotifier()
    ext.bind(notifier)
    watchers: list[RequestWatcher] = []

    @asynccontextmanager
    async def lifespan(_: Server[RunState]) -> AsyncIterator[RunState]:
        run_scope = SessionScope.named(session).key if session else new_scope()
        yield RunState(services=services, run_scope=run_scope, extension=ext)

    def scope_of(ctx: ServerRequestContext[RunState]) -> SessionScope:
        return policy(ctx, ctx.lifespan_context.run_scope)

    def tool_call(ctx: ServerRequestContext[RunState]) -> CallContext:
        # report_progress is a no-op when the client sent no progress token (in-process clients pass a callback
        # instead of a token, so the token cannot be checked here); the heartbeat only calls it after ~1 s of work.
        return CallContext(
            services=services,
            session=scope_of(ctx),
            progress=ctx.session.report_progress,
            private_session=private,
            cap=caps.for_request(ctx),
        )

    async def list_tools(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        notifier.track(ctx)
        if watchers:
            call = tool_call(ctx)
            for watcher in watchers:
                watcher(ctx, call)
        return types.ListToolsResult(tools=[*own_tools, *await ext.list_tools()])

    async def handle_call(
        ctx: ServerRequestContext[RunState], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        notifier.track(ctx)
        call = tool_call(ctx)
        for watcher in watchers:
            watcher(ctx, call)
        spec = TOOLS_BY_NAME.get(params.name)
        if spec is not None:
            own = spec

            async def run_own() -> types.CallToolResult:
                return await call_tool(own, call, params.arguments)

            return await ext.intercept_tool(call, spec.name, params.arguments, run_own)
        result = await ext.call_tool(ctx, call, params.name, params.arguments)
        if result is not None:
            return result
        known = ", ".join(sorted(TOOLS_BY_NAME))
        return error_result(f"Unknown tool {params.name!r}. Tools here: {known}, …")

    async def list_resources(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        scope = scope_of(ctx)
        resources: list[types.Resource] = []
        if scope.enumerable:
            resources = [resource_of(meta) for meta in await services.store.list(scope.key)]
        return types.ListResourcesResult(resources=[*resources, *await ext.list_resources()])

    async def list_templates(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        templates = [OUTPUT_TEMPLATE, *await ext.list_resource_templates()]
        return types.ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        ctx: ServerRequestContext[RunState], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if is_output_uri(uri):
            try:
                return await read_output_resource(services.store, scope_of(ctx).key, uri)
            except OffloadError as exc:  # the error's own code: a store outage is not a bad argument
                raise MCPError(code=exc.rpc_code, message=str(exc)) from None
        result = await ext.read_resource(ctx, uri)
        if result is not None:
            return result
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource {uri[:200]!r}")

    async def list_prompts(
        ctx: ServerRequestContext[RunState], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=await ext.list_prompts())

    async def get_prompt(
        ctx: ServerRequestContext[RunState], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        result = await ext.get_prompt(ctx, params.name, params.arguments)
        if result is not None:
            return result
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {params.name[:200]!r}")

    def input_schema(tool_name: str) -> dict[str, Any] | None:
        if tool_name in own_schemas:
            return own_schemas[tool_name]
        return ext.input_schema(tool_name)

    server = OffloadServer(
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
    server.request_watchers = watchers
    return server
