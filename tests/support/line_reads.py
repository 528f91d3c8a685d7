"""A real agent as the MCP client of `mcp-offload`, its model scripted to read 2,000 stored lines and follow each
continuation, then search 500 hits and follow that: the document, the model, and the check that every line and every
hit reached the model exactly once (as the Codex test does, for any client's tool names and result wrapping)."""

from __future__ import annotations

import asyncio
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Bridge:
    """A tool of the agent's own that calls its MCP tools by name, the call the model makes first, and the answer the
    bridge gives while the agent's MCP server is still starting (the model then makes its first call again)."""

    tool: str
    name_key: str
    args_key: str
    first: ToolCall | None = None  # e.g. Qwen Code's `tool_search`, which shows the model the schemas it calls by
    not_yet: str | None = None  # e.g. Qwen Code's "… is not registered in this session. Run tool_search again …"
    retries: int = 60  # of the first call, a second apart

    def call(self, name: str, arguments: dict[str, Any]) -> ToolCall:
        return ToolCall(self.tool, {self.name_key: name, self.args_key: arguments})

    def name_of(self, exchange: ToolExchange) -> str:
        if exchange.name == self.tool and isinstance(exchange.arguments, dict):
            return str(exchange.arguments.get(self.name_key, ""))
        return exchange.name

    def too_early(self, exchange: ToolExchange) -> bool:
        return self.not_yet is not None and exchange.name == self.tool and self.not_yet in (exchange.result or "")

    def first_step(self, turn: Turn) -> Step | None:
        """The first call, or again (after a second) when the bridge said the MCP tools are not there yet."""
        if self.first is None:
            return None
        exchanges = turn.exchanges()
        tries = sum(e.name == self.first.name for e in exchanges)
        if not tries:
            return reply(self.first)
        if exchanges and self.too_early(exchanges[-1]) and tries < self.retries:
            return reply(self.first, first_token_delay_s=1.0)
        return None


OPENCLAW_BRIDGE = Bridge("tool_call", "id", "args")  # OpenClaw 2026.9: tool_call {"id": NAME, "args": {...}}


def reader(
    handle: str, read: str, search: str, unwrap: Callable[[str], str] = str, bridge: Bridge | None = None
) -> Callable[[Turn], Step]:
    """The model: read lines 1-2,000 (tool `read`, as the agent names it), follow each continuation, search 500 hits
    (tool `search`), follow that, then answer. `unwrap`: the answer from the agent's result text; `bridge`: how the
    agent's model calls MCP tools when they sit behind a tool of its own."""

    def call(name: str, arguments: dict[str, Any]) -> ToolCall:
        return bridge.call(name, arguments) if bridge else ToolCall(name, arguments)

    def name_of(exchange: ToolExchange) -> str:
        return bridge.name_of(exchange) if bridge else exchange.name

    def step(turn: Turn) -> Step:
        if (bridge.tool if bridge else read) not in turn.tool_names:
            return reply("Scripted session")
        first = bridge.first_step(turn) if bridge else None
        if first is not None:
            return first
        exchanges = [e for e in turn.exchanges() if not (bridge and bridge.too_early(e))]
        done = [e for e in exchanges if name_of(e) in (read, search)]
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
