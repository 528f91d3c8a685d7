"""A real agent as the MCP client of `mcp-offload`, its model scripted to read 2,000 stored lines and follow each
continuation, then search 500 hits and follow that: the document, the model, and the check that every line and every
hit reached the model exactly once (as the Codex test does, for any client's tool names and result wrapping)."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_upstream.script import Step, ToolCall, ToolExchange, Turn, reply
from mcp_offload import SessionScope, Settings, build_services, offload
from support.continuations import continuation

SESSION = "line-reads"
LINES = "".join(f"line {i:05d} " + "x" * (i % 7) + "\n" for i in range(1, 2001))


def store_lines(store: Path) -> str:
    """LINES stored in session SESSION of `store`; its handle."""

    async def run() -> str:
        services = build_services(Settings(store=str(store)))
        try:
            return (await offload(services, SessionScope.named(SESSION), LINES, name="lines")).handle
        finally:
            await services.aclose()

    return asyncio.run(run())


def server_command(store: Path) -> tuple[str, list[str]]:
    """The `mcp-offload` stdio server (this venv's) on `store`, in session SESSION."""
    return str(Path(sys.executable).parent / "mcp-offload"), [
        "--store", str(store), "--session", SESSION, "--no-config"
    ]  # fmt: skip


def reader(
    handle: str, read: str, search: str, unwrap: Callable[[str], str] = str, bridge: str | None = None
) -> Callable[[Turn], Step]:
    """The model: read lines 1-2,000 (tool `read`, as the agent names it), follow each continuation, search 500 hits
    (tool `search`), follow that, then answer. `unwrap`: the answer from the agent's result text; `bridge`: the tool
    of the agent's own that calls MCP tools by name (OpenClaw's `tool_call`: `{"id": NAME, "args": {...}}`)."""

    def call(name: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(bridge, {"id": name, "args": arguments}) if bridge else ToolCall(name, arguments)

    def name_of(exchange: ToolExchange) -> str:
        if bridge and exchange.name == bridge and isinstance(exchange.arguments, dict):
            return str(exchange.arguments.get("id", ""))
        return exchange.name

    def step(turn: Turn) -> Step:
        if (bridge or read) not in turn.tool_names:
            return reply("Scripted session")
        done = [e for e in turn.exchanges() if name_of(e) in (read, search)]
        if not done:
            return reply(call(read, {"handle": handle, "start_line": 1, "end_line": 2000}))
        following = continuation(unwrap(done[-1].result or ""))
        if following is not None and len(done) < 80:
            return reply(call(read, following))
        if not any(name_of(e) == search for e in done):
            return reply(call(search, {"pattern": "line", "handle": handle, "max_results": 500}))
        return reply("done")

    return step


def check_every_line_and_hit_once(reads: list[str], searches: list[str]) -> None:
    """The answers the model saw (unwrapped): the 2,000 lines exactly once, in order, and hits 1-500 exactly once."""
    assert len(searches) == 1 and len(reads) >= 2, (len(reads), len(searches))
    lines = [line for text in reads for line in re.findall(r"^line \d{5} x*$", text, re.M)]
    assert lines == LINES.splitlines()
    hits = [int(n) for text in [*searches, *reads] for n in re.findall(r"^(\d+): line \d{5}", text, re.M)]
    assert hits == list(range(1, 501))
