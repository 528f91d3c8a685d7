"""The proxy as a server `Extension`: upstream catalogs under namespaced names, calls forwarded through the
offload policy, resources/templates/prompts forwarded, progress relayed, catalog changes pushed to clients.

Names (names.py). An upstream tool `t` of server `s` is listed as `s__t`, unique and stable. Description,
input schema and annotations are the upstream's, unchanged. The output schema is dropped from tools whose
results may be offloaded: an offloaded result carries a reference instead of the promised structure, and a
validating client (the SDK's does) would reject it. Tools the config marks `never` keep their schema.

Arguments. A value `offload://outputs/<handle>` in a call's arguments is replaced by that stored output's exact
content (the caller's session only) before the call goes upstream (handle_arguments.py); proxy_status's description
says so, once, for every upstream tool.

Resources keep their URIs (tool results refer to them, and a URI means the same thing everywhere); their names
get the prefix. A read is routed by exact URI, then by the templates, then tried on each upstream in turn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import anyio.abc
import mcp.types as types
from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_offload.core.pipeline import answer_error
from mcp_offload.core.services import Services
from mcp_offload.core.tools import READ_BACK_TOOLS, TOOLS_BY_NAME, CallContext
from mcp_offload.errors import OffloadError
from mcp_offload.mcp_server.change_notifier import ListChanged
from mcp_offload.mcp_server.extension import Extension, NextTool
from mcp_offload.mcp_server.savings_tap import count_text
from mcp_offload.mcp_server.tools import RESULT_META, error_result, result_to_mcp
from mcp_offload.proxy.config import ProxyConfig, UpstreamSpec
from mcp_offload.proxy.handle_arguments import Substitution, substitute_outputs
from mcp_offload.proxy.names import SEPARATOR, NameTable, Route, build_table, clean_prefix
from mcp_offload.proxy.policy import PASSED, OffloadPolicy, ResultHandling
from mcp_offload.proxy.stats import PassedByHandle, SavingsStats
from mcp_offload.proxy.transports import UpstreamUnavailable
from mcp_offload.proxy.upstream import Catalog, Upstream

log = logging.getLogger(__name__)

STATUS_TOOL = "proxy_status"
# Stored content substituted into one call to a remote upstream, at most: the MCP TypeScript SDK's HTTP servers
# refuse messages over 4 MB; JSON escaping (a newline or a quote takes two bytes) needs the rest.
REMOTE_ARGUMENT_BYTES = 3 * 1024 * 1024

STATUS_TOOL_DEF = types.Tool(
    name=STATUS_TOOL,
    title="Proxied servers and savings",
    description=(
        "Show the MCP servers this proxy forwards to (state, tool count, last error) and this session's token "
        "savings: tokens kept out of the context by offloading or by passing stored outputs as arguments, minus "
        "tokens pulled back with read/search/query.\n"
        "Any argument of their tools may be offload://outputs/<handle>: the proxy passes that stored output's "
        "exact content instead (its JSON value where the parameter is not a string)."
    ),
    input_schema={"type": "object", "properties": {}, "additionalProperties": False},
    annotations=types.ToolAnnotations(
        read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    ),
)


def _same_upstream(upstream: Upstream, spec: UpstreamSpec, config: ProxyConfig) -> bool:
    return (
        upstream.spec == spec
        and upstream.call_timeout_s == config.call_timeout_for(spec)
        and upstream.startup_timeout_s == config.startup_timeout_for(spec)
    )


class ProxyRouter(Extension):
    """The proxy extension. Use `async with router.running():` around serving; pass it to `build_server`.
    `reserved`: names a layer above lists as its own tools (lazy tools), so no upstream tool takes them."""

    def __init__(
        self,
        config: ProxyConfig,
        services: Services,
        *,
        stats: SavingsStats | None = None,
        reserved: frozenset[str] = frozenset(),
    ) -> None:
        self.config = config
        self.services = services
        self.policy = OffloadPolicy(services)
        self.stats = stats or SavingsStats()
        self.upstreams = [self._new_upstream(spec, config) for spec in config.enabled]
        self._tg: anyio.abc.TaskGroup | None = None
        self._supervisors: dict[Upstream, tuple[anyio.CancelScope, anyio.Event]] = {}
        self._notifiers: list[ListChanged] = []
        self._table = NameTable()
        self._table_key: tuple[int, ...] | None = None
        self._generation = 0  # bumped by reconfigure: the upstream list changed
        self._reserved = set(TOOLS_BY_NAME) | {STATUS_TOOL} | reserved
        self.shortcut_calls = 0  # calls the stdio front answered from their line (serve/stdio_shortcut.py)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ProxyRouter]:
        """Start every upstream's supervisor; on exit, stop them all (stdio children are terminated)."""
        disabled = [spec.name for spec in self.config.upstreams if spec.options.disabled]
        log.info(
            "proxying %d server(s): %s%s",
            len(self.upstreams),
            ", ".join(f"{u.name} ({u.spec.kind})" for u in self.upstreams) or "none",
            f"; disabled: {', '.join(disabled)}" if disabled else "",
        )
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for upstream in self.upstreams:
                self._start(upstream)
            try:
                yield self
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    def _new_upstream(self, spec: UpstreamSpec, config: ProxyConfig) -> Upstream:
        return Upstream(
            spec,
            call_timeout_s=config.call_timeout_for(spec),
            startup_timeout_s=config.startup_timeout_for(spec),
            on_catalog_changed=self._catalog_changed,
        )

    def _start(self, upstream: Upstream) -> None:
        assert self._tg is not None, "start upstreams inside running()"
        scope, done = anyio.CancelScope(), anyio.Event()
        self._supervisors[upstream] = (scope, done)

        async def supervise() -> None:
            try:
                with scope:
                    await upstream.run()
            finally:
                done.set()

        self._tg.start_soon(supervise)

    async def _stop(self, upstream: Upstream) -> None:
        scope, done = self._supervisors.pop(upstream)
        scope.cancel()
        with anyio.move_on_after(10):
            await done.wait()

    async def reconfigure(self, config: ProxyConfig) -> tuple[list[str], list[str], list[str]]:
        """Apply a new config while running: start new upstreams, stop removed ones, restart changed ones (their
        entry or effective timeouts differ), leave the others running; then tell clients the lists changed.
        Returns the names (added, removed, restarted). `lazy_tools` cannot change while running (kept as is)."""
        config = replace(config, lazy_tools=self.config.lazy_tools)
        old = {u.name: u for u in self.upstreams}
        added, removed, restarted = [], [], []
        upstreams: list[Upstream] = []
        for spec in config.enabled:
            current = old.pop(spec.name, None)
            if current is not None and _same_upstream(current, spec, config):
                upstreams.append(current)
                continue
            if current is not None:
                restarted.append(spec.name)
                await self._stop(current)
            else:
                added.append(spec.name)
            upstream = self._new_upstream(spec, config)
            upstreams.append(upstream)
            self._start(upstream)
        for gone in old.values():
            removed.append(gone.name)
            await self._stop(gone)
        self.config = config
        self.upstreams = upstreams
        self._generation += 1
        if added or removed or restarted:
            for upstream in upstreams:
                if upstream.name in added or upstream.name in restarted:
                    await upstream.wait_started()
            for notifier in self._notifiers:
                await notifier.changed(tools=True, resources=True, prompts=True)
        return added, removed, restarted

    # -- names ------------------------------------------------------------------------------------------------
    def table(self) -> NameTable:
        key = (self._generation, *(u.catalog_version for u in self.upstreams))
        if key != self._table_key:
            self._table = build_table(self.upstreams, self._reserved)
            self._table_key = key
        return self._table

    async def settle(self) -> None:
        """Wait for upstreams still starting for the first time (bounded by the startup timeout; they start in
        parallel); nudge failed ones to retry in the background."""
        for upstream in self.upstreams:
            await upstream.wait_started()
            upstream.poke()

    # -- the Extension ------------------------------------------------------------------------------------------
    def bind(self, notifier: ListChanged) -> None:
        self._notifiers.append(notifier)

    async def _catalog_changed(self, upstream: Upstream, old: Catalog) -> None:
        new = upstream.catalog
        tools = old.tools != new.tools
        resources = old.resources != new.resources or old.templates != new.templates
        prompts = old.prompts != new.prompts
        for notifier in self._notifiers:
            await notifier.changed(tools=tools, resources=resources, prompts=prompts)

    async def list_tools(self) -> list[types.Tool]:
        await self.settle()
        return [STATUS_TOOL_DEF, *self.table().listed]

    def input_schema(self, name: str) -> dict[str, Any] | None:
        if name == STATUS_TOOL:
            return STATUS_TOOL_DEF.input_schema
        route = self.table().tools.get(name)
        return route.tool.input_schema if route is not None and route.tool is not None else None

    async def call_tool(
        self, ctx: ServerRequestContext[Any], call: CallContext, name: str, arguments: dict[str, Any] | None
    ) -> types.CallToolResult | None:
        if name == STATUS_TOOL:
            return await self.status_result(call)
        route = self.table().tools.get(name)
        if route is None:  # maybe an upstream still starting (a client may call before it lists)
            await self.settle()
            route = self.table().tools.get(name)
        if route is None:
            return self.unavailable_error(name)
        return await self.forward(call, route, arguments)

    def ready_route(self, name: str) -> Route | None:
        """The route of `name` when a call of it needs nothing but `forward` now: a listed upstream tool whose
        upstream is ready and takes tool calls as JSON lines (a stdio child). None otherwise (the stdio front's
        shortcut then leaves the call to the full path, serve/stdio_shortcut.py)."""
        route = self.table().tools.get(name)
        if route is None or not route.upstream.takes_raw_calls:
            return None
        return route

    async def forward(self, call: CallContext, route: Route, arguments: dict[str, Any] | None) -> types.CallToolResult:
        """Call the upstream tool, relaying progress to `call.progress`, and pass the result through the offload
        policy (resource links as `call.cap` wants them)."""
        spec = route.upstream.spec
        report = call.progress

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            if report is not None:
                await report(progress, total, message)

        try:
            substitution = await substitute_outputs(
                self.services.store,
                call.session.key,
                arguments,
                route.tool.input_schema if route.tool is not None else None,
                tool=route.public,
                max_bytes=self._argument_bytes(spec),
            )
        except OffloadError as exc:
            return result_to_mcp(await answer_error(exc, call))
        if substitution.outputs:
            log.debug("%s: arguments from stored outputs: %s", route.public, substitution.describe())
        try:
            result = await route.upstream.call_tool(route.name, substitution.arguments, progress=relay)
        except UpstreamUnavailable as exc:
            return error_result(str(exc))
        if result.is_error and substitution.outputs:  # e.g. the upstream's own size limit: say what it was sent
            note = f"(The proxy passed stored outputs as arguments: {substitution.describe()}.)"
            result.content = [*result.content, types.TextContent(type="text", text=note)]
        passed = PassedByHandle() if result.is_error else self._passed_by_handle(substitution)
        if route.name in spec.options.never:
            result.meta = None
            await self._account(call, spec.name, route.name, PASSED, passed)
            return result
        result, decision = await self.policy.apply(
            result,
            scope=call.session.key,
            server=spec.name,
            tool=route.name,
            public_name=route.public,
            arguments=arguments,
            threshold=self.config.threshold_for(spec),
            always=route.name in spec.options.always,
            links=call.cap.resource_links,
        )
        await self._account(call, spec.name, route.name, decision, passed)
        return result

    def _passed_by_handle(self, substitution: Substitution) -> PassedByHandle:
        """What the stored outputs passed as arguments kept out of the model's call: each output's tokens minus those
        of the URI it wrote instead (counted only for a call the upstream carried out: a refused one may be retried
        another way)."""
        count = self.services.tokens.count
        tokens = sum(max(0, output.tokens - count(output.uri)) for output in substitution.outputs)
        return PassedByHandle(len(substitution.outputs), tokens)

    def _argument_bytes(self, spec: UpstreamSpec) -> int:
        """How much stored content one call to `spec` may carry in its arguments: a stdio upstream reads any size
        (the store's own cap bounds it); a remote one gets what the MCP TypeScript SDK's HTTP servers accept."""
        if spec.kind == "stdio":
            return self.services.settings.max_output_bytes
        return REMOTE_ARGUMENT_BYTES

    async def _account(
        self, call: CallContext, server: str, tool: str, decision: ResultHandling, passed: PassedByHandle
    ) -> None:
        """One upstream call into this session's savings and into the durable record (savings/): its result, and
        the stored outputs its arguments named."""
        self.stats.record_result(call.session.key, decision)
        self.stats.record_passed(call.session.key, passed)
        offloaded = decision.offloaded
        kept_out = decision.tokens_original - decision.tokens_reply if offloaded else 0
        await self.services.savings.add(
            server,
            tool,
            results_seen=1,
            results_offloaded=int(offloaded),
            tokens_kept_out=kept_out,
            arguments_by_handle=passed.arguments,
            tokens_passed_by_handle=passed.tokens,
        )

    def unavailable_error(self, name: str) -> types.CallToolResult | None:
        """A name under the prefix of a server that is down gets a clear error instead of 'unknown tool'."""
        for upstream in self.upstreams:
            prefix = clean_prefix(upstream.spec.prefix)
            if prefix and name.startswith(prefix + SEPARATOR) and upstream.state != "ready":
                upstream.poke()
                return error_result(
                    f"Tool {name!r} belongs to MCP server {upstream.name!r}, which is not running "
                    f"({upstream.last_error or upstream.state}). The proxy retries starting it (with backoff): "
                    "list the tools again in a moment. The other servers are unaffected."
                )
        return None

    async def intercept_tool(
        self, call: CallContext, name: str, arguments: dict[str, Any] | None, call_next: NextTool
    ) -> types.CallToolResult:
        """Counts the tokens our retrieval tools pull back (the other side of the savings figure)."""
        result = await call_next()
        if name in READ_BACK_TOOLS and not result.is_error:
            await self._count_retrieval(call, result)
        return result

    async def _count_retrieval(self, call: CallContext, result: types.CallToolResult) -> None:
        self.stats.record_retrieval(call.session.key, await count_text(self.services.tokens, result))

    async def list_resources(self) -> list[types.Resource]:
        await self.settle()
        return list(self.table().resources)

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        await self.settle()
        return list(self.table().templates)

    async def read_resource(self, ctx: ServerRequestContext[Any], uri: str) -> types.ReadResourceResult | None:
        table = self.table()
        owners: list[Upstream] = []
        if (owner := table.uri_owner.get(uri)) is not None:
            owners.append(owner)
        owners += [u for pattern, u in table.template_owners if pattern.fullmatch(uri) and u not in owners]
        owners += [u for u in self.upstreams if u not in owners and u.catalog.resources + u.catalog.templates]
        first_error: MCPError | None = None
        for upstream in owners:
            try:
                result = await upstream.read_resource(uri)
            except UpstreamUnavailable as exc:
                first_error = first_error or MCPError(code=types.INTERNAL_ERROR, message=str(exc))
                continue
            except MCPError as exc:
                first_error = first_error or exc
                continue
            result.meta = None
            return result
        if first_error is not None:
            raise first_error
        return None

    async def list_prompts(self) -> list[types.Prompt]:
        await self.settle()
        return list(self.table().listed_prompts)

    async def get_prompt(
        self, ctx: ServerRequestContext[Any], name: str, arguments: dict[str, str] | None
    ) -> types.GetPromptResult | None:
        route = self.table().prompts.get(name)
        if route is None:
            return None
        try:
            result = await route.upstream.get_prompt(route.name, arguments)
        except UpstreamUnavailable as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        result.meta = None
        return result

    # -- status -------------------------------------------------------------------------------------------------
    async def status_result(self, call: CallContext) -> types.CallToolResult:
        async with anyio.create_task_group() as tg:  # a ready stdio upstream that died unnoticed shows up here
            for upstream in self.upstreams:
                tg.start_soon(upstream.ping)
        for upstream in self.upstreams:
            upstream.poke()
        statuses = [u.status() for u in self.upstreams]
        lines = [f"{len(statuses)} MCP server(s) behind this proxy:"]
        for s in statuses:
            line = f"- {s.name} ({s.transport}): {s.state}, {s.tools} tools"
            if s.protocol_version:
                line += f", protocol {s.protocol_version}"
            if s.restarts:
                line += f", restarted {s.restarts}x"
            if s.last_error:
                line += f"; last error: {s.last_error}"
            lines.append(line)
        disabled = [spec.name for spec in self.config.upstreams if spec.options.disabled]
        if disabled:
            lines.append(f"Disabled in the config: {', '.join(disabled)}.")
        lines.append(self.stats.render(call.session.key))
        status = {  # for programs, in `_meta` like our tools' results (see tools.py: the model reads the text)
            "servers": [
                {
                    "name": s.name,
                    "transport": s.transport,
                    "state": s.state,
                    "tools": s.tools,
                    "protocol_version": s.protocol_version,
                    "restarts": s.restarts,
                    "last_error": s.last_error,
                }
                for s in statuses
            ],
            "savings": self.stats.session(call.session.key).as_dict(),
            "shortcut_calls": self.shortcut_calls,
        }
        return types.CallToolResult(
            content=[types.TextContent(type="text", text="\n".join(lines))], _meta={RESULT_META: status}
        )
