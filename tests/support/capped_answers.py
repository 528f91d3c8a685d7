"""A real agent as the MCP client of `mcp-offload`, its model scripted to fetch an answer over the agent's own limit
and follow the continuations of the capped pieces: the stored document, the model, and the answer rebuilt from what
the agent showed its model."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_upstream.script import Step, ToolCall, ToolExchange, Turn, reply
from mcp_offload import SessionScope, Settings, build_services, offload, query
from support.continuations import continuation, shown_part
from support.line_reads import Bridge

SESSION = "capped-answers"
# ~82 KB of jq output: over Claude Code's 50,000 and Gemini CLI's 40,000 characters, under jq's own 100,000 cap
DOC = json.dumps([{"id": i, "name": f"item-{i:04d}", "tags": ["alpha", "beta", "gamma"][: i % 4]} for i in range(1500)])
PROGRAM = ".[] | {id, name, tags}"


def prepare(store: Path) -> tuple[str, str]:
    """The stored document's handle (in session SESSION), and the jq answer the model must get back."""

    async def run() -> tuple[str, str]:
        services = build_services(Settings(store=str(store)))
        try:
            scope = SessionScope.named(SESSION)
            handle = (await offload(services, scope, DOC, name="items")).handle
            return handle, (await query(services, scope, handle, PROGRAM, compact=True)).result
        finally:
            await services.aclose()

    return asyncio.run(run())


def server_command(store: Path) -> tuple[str, list[str]]:
    """The `mcp-offload` stdio server (this venv's) on `store`, in session SESSION."""
    return str(Path(sys.executable).parent / "mcp-offload"), [
        "--store", str(store), "--session", SESSION, "--no-config"
    ]  # fmt: skip


def model(
    handle: str, query_tool: str, read_tool: str, unwrap: Callable[[str], str] = str, bridge: Bridge | None = None
) -> Callable[[Turn], Step]:
    """Query, then read each continuation the last answer ends with (`unwrap`: the answer from the agent's result
    text; `bridge`: how the agent's model calls MCP tools when they sit behind a tool of its own), then answer."""

    def call(name: str, arguments: dict[str, Any]) -> ToolCall:
        return bridge.call(name, arguments) if bridge else ToolCall(name, arguments)

    def name_of(exchange: ToolExchange) -> str:
        return bridge.name_of(exchange) if bridge else exchange.name

    def step(turn: Turn) -> Step:
        if (bridge.tool if bridge else query_tool) not in turn.tool_names:
            return reply("Scripted session")
        first = bridge.first_step(turn) if bridge else None
        if first is not None:
            return first
        exchanges = [e for e in turn.exchanges() if not (bridge and bridge.too_early(e))]
        done = [e for e in exchanges if name_of(e) in (query_tool, read_tool)]
        if not done:
            return reply(call(query_tool, {"handle": handle, "query": PROGRAM, "compact": True}))
        following = continuation(unwrap(done[-1].result or ""))
        if following is not None and len(done) < 40:
            return reply(call(read_tool, following))
        return reply("done")

    return step


def rebuilt(answers: list[str]) -> str:
    """The whole answer from the pieces shown: the query's first piece, then each read's text (between its header
    line and its continuation)."""
    pieces = [shown_part(answers[0])]
    for answer in answers[1:]:
        body = shown_part(answer).split("\n", 1)[1]
        pieces.append(body.removesuffix("\n") if continuation(answer) else body)
    return "".join(pieces)
