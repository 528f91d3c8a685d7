"""Helpers for the proxy tests, and a small upstream MCP server (run this file: `python tests/support/proxy.py`) for
what the reference servers cannot do on demand: change their tool list, hang, die mid-call, tell their pid.

The reference servers come from `.ci/proxy-deps.sh`: npm packages under $MCP_OFFLOAD_TEST_NODE_MODULES (default
~/.cache/mcp-offload/proxy-servers/node_modules), PyPI `mcp-server-git` / `mcp-server-time` beside this Python.
Tests that need one that is missing are skipped with a loud reason saying how to install it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

DEFAULT_NODE_MODULES = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / (
    "mcp-offload/proxy-servers/node_modules"
)
NODE_MODULES = Path(os.environ.get("MCP_OFFLOAD_TEST_NODE_MODULES") or DEFAULT_NODE_MODULES)
INSTALL_HINT = "install the proxy test servers with: bash .ci/proxy-deps.sh (sets MCP_OFFLOAD_TEST_NODE_MODULES)"
HERE = Path(__file__).resolve()


# -- locating the real servers ------------------------------------------------------------------------------
def npm_entry(package: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A config entry running @modelcontextprotocol/<package> with node; skips the test loudly if missing."""
    import pytest

    script = NODE_MODULES / "@modelcontextprotocol" / package / "dist" / "index.js"
    node = shutil.which("node")
    if node is None or not script.is_file():
        pytest.skip(
            f"PROXY TEST SKIPPED: @modelcontextprotocol/{package} not found under {NODE_MODULES}; {INSTALL_HINT}"
        )
    return {"command": node, "args": [str(script), *args], **extra}


def python_entry(executable: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A config entry for a PyPI server installed beside this Python (mcp-server-git, mcp-server-time)."""
    import pytest

    path = Path(sys.executable).parent / executable
    if not path.exists():
        found = shutil.which(executable)
        if found is None:
            pytest.skip(f"PROXY TEST SKIPPED: {executable} is not installed; {INSTALL_HINT}")
        path = Path(found)
    return {"command": str(path), "args": list(args), **extra}


def fixture_entry(**extra: Any) -> dict[str, Any]:
    """A config entry running the small upstream server below."""
    return {"command": sys.executable, "args": [str(HERE)], **extra}


@asynccontextmanager
async def running_proxy(services: Any, config: dict[str, Any], *, lazy_tools: bool = False) -> AsyncIterator[Any]:
    """build_server with the proxy extension for `config` (a dict in the servers.json format), upstreams running."""
    from dataclasses import replace

    from mcp_offload.mcp_server.offload_server import build_server
    from mcp_offload.proxy import open_proxy
    from mcp_offload.proxy.config import parse_config

    parsed = parse_config(config)
    if lazy_tools:
        parsed = replace(parsed, lazy_tools=True)
    async with open_proxy(services, parsed) as extensions:
        server = build_server(services, extensions=extensions)
        server.router = extensions[0]  # type: ignore[attr-defined]
        yield server


# -- the fixture upstream server ------------------------------------------------------------------------------
def _serve() -> None:
    import anyio
    import mcp.types as types
    from mcp.server import NotificationOptions, Server, ServerRequestContext
    from mcp.server.models import InitializationOptions
    from mcp.server.stdio import stdio_server
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
    from mcp.shared.exceptions import MCPError

    obj = {"type": "object", "properties": {"n": {"type": "integer"}, "name": {"type": "string"}}}
    catalog = {
        name: types.Tool(name=name, description=text, input_schema=obj)
        for name, text in {
            "echo": "Echo the name argument.",
            "pid": "This server's process id.",
            "hang": "Sleep n seconds, then answer (if cancelled first, write 'cancelled' to the file name).",
            "die": "Exit the process at once (simulates a crash mid-call).",
            "add_tool": "Add a tool called name (sends tools/list_changed).",
            "json": "A JSON document with n items.",
            "fail": "n=1: a JSON-RPC error; n=2: a large isError result.",
            "weird name/with:chars": "A tool whose name needs cleaning.",
            "env": "The value of the environment variable called name, or <unset>.",
        }.items()
    }
    bus = InMemorySubscriptionBus()
    sessions: dict[object, Any] = {}

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        names, start = sorted(catalog), int((params.cursor if params else None) or 0)
        page = names[start : start + 3]  # small pages: the proxy must walk them all
        more = start + 3 < len(names)
        return types.ListToolsResult(tools=[catalog[n] for n in page], next_cursor=str(start + 3) if more else None)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        if ctx.protocol_version != "2026-07-28":
            conn = ctx.session._connection
            if conn not in sessions:
                sessions[conn] = ctx.session
                conn.exit_stack.callback(sessions.pop, conn, None)
        args = params.arguments or {}

        def text(value: str) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text=value)])

        match params.name:
            case "echo" | "weird name/with:chars":
                return text(str(args.get("name")))
            case "pid":
                return text(str(os.getpid()))
            case "env":
                return text(os.environ.get(str(args.get("name")), "<unset>"))
            case "hang":
                try:
                    await anyio.sleep(float(args.get("n", 60)))
                except anyio.get_cancelled_exc_class():
                    if args.get("name"):  # a file to write: proof that the cancellation reached this server
                        Path(str(args["name"])).write_text("cancelled")  # noqa: ASYNC240 - sync: we are being cancelled
                    raise
                return text("done")
            case "die":
                os._exit(3)
            case "add_tool":
                name = str(args["name"])
                catalog[name] = types.Tool(name=name, description="Added at run time.", input_schema=obj)
                await bus.publish(ToolsListChanged())
                for session in list(sessions.values()):
                    await session.send_tool_list_changed()
                return text("added")
            case "fail":
                if args.get("n") == 1:
                    raise MCPError(code=types.INVALID_PARAMS, message="n is out of range", data={"max": 0})
                return types.CallToolResult(content=[types.TextContent(type="text", text="E" * 50_000)], is_error=True)
            case "json":
                import json

                items = [{"id": i, "even": i % 2 == 0} for i in range(int(args.get("n", 10)))]
                return text(json.dumps({"items": items}))
            case name if name in catalog:
                return text(f"called {name}")
        return types.CallToolResult(content=[types.TextContent(type="text", text="unknown tool")], is_error=True)

    class FixtureServer(Server):  # advertise tools.listChanged
        def create_initialization_options(
            self, notification_options: NotificationOptions | None = None, *a: Any, **kw: Any
        ) -> InitializationOptions:
            return super().create_initialization_options(
                notification_options or NotificationOptions(tools_changed=True), *a, **kw
            )

    server = FixtureServer(
        "proxy-fixture", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )  # fmt: skip

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


if __name__ == "__main__":
    _serve()
