"""The real Claude Code (2.1.328) as the MCP client of `mcp-offload` (it speaks the sessionless 2026-07-28 protocol,
clientInfo name `claude-code`), its model scripted: a jq answer of ~150 KB arrives in pieces that Claude Code shows
whole, and following their continuations gives the whole answer back.

Without the cap, Claude Code saves a result over 50,000 characters to a file and shows the model a 2 KB preview
(`<persisted-output>`), and refuses one over ~25,000 tokens."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from llm_upstream import UpstreamServer
from llm_upstream.script import Step, ToolCall, Turn, reply
from mcp_offload import SessionScope, Settings, build_services, offload, query
from support.agents import CLAUDE, agent_env, need
from support.continuations import continuation, shown_part

SESSION = "claude-test"
DOC = json.dumps([{"id": i, "name": f"item-{i:04d}", "tags": ["alpha", "beta", "gamma"][: i % 4]} for i in range(1500)])
PROGRAM = ".[] | {id, name, tags}"
QUERY, READ = "mcp__offload__query_large_output", "mcp__offload__read_large_output"


def prepare(store: Path) -> tuple[str, str]:
    """The stored document's handle, and the jq answer the model must get back."""

    async def run() -> tuple[str, str]:
        services = build_services(Settings(store=str(store)))
        try:
            scope = SessionScope.named(SESSION)
            handle = (await offload(services, scope, DOC, name="items")).handle
            return handle, (await query(services, scope, handle, PROGRAM, compact=True)).result
        finally:
            await services.aclose()

    return asyncio.run(run())


def model(handle: str) -> Callable[[Turn], Step]:
    def step(turn: Turn) -> Step:
        if QUERY not in turn.tool_names:
            return reply("Scripted session")
        done = [e for e in turn.exchanges() if e.name in (QUERY, READ)]
        if not done:
            return reply(ToolCall(QUERY, {"handle": handle, "query": PROGRAM, "compact": True}))
        following = continuation(done[-1].result or "")
        if following is not None and len(done) < 40:
            return reply(ToolCall(READ, following))
        return reply("done")

    return step


def test_claude_code_gets_a_big_answer_whole_in_pieces(tmp_path: Path) -> None:
    need(CLAUDE)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle, expected = prepare(store)
    assert 60_000 < len(expected) < 100_000  # over Claude Code's 50,000-character limit, under jq's own cap
    server = {"command": str(Path(sys.executable).parent / "mcp-offload"),
              "args": ["--store", str(store), "--session", SESSION, "--no-config"]}  # fmt: skip
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"offload": server}}))
    with UpstreamServer(model(handle), seed=0) as upstream:
        env = agent_env(
            HOME=str(home), ANTHROPIC_BASE_URL=upstream.base_url, ANTHROPIC_API_KEY="sk-ant-test-key", IS_SANDBOX="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", ENABLE_TOOL_SEARCH="false",
        )  # fmt: skip
        argv = [str(CLAUDE), "-p", "get the items", "--output-format", "json", "--dangerously-skip-permissions",
                "--mcp-config", str(config), "--strict-mcp-config"]  # fmt: skip
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("anthropic")[-1].json
    results = [
        block["content"] if isinstance(block["content"], str) else "".join(p.get("text", "") for p in block["content"])
        for message in last["messages"] if isinstance(message["content"], list)
        for block in message["content"] if block.get("type") == "tool_result"
    ]  # fmt: skip
    assert not [r[:200] for r in results if "persisted-output" in r or "exceeds maximum allowed tokens" in r]
    assert len(results) >= 3 and "cut at Claude Code's 48,000-byte / 25,000-token cap" in results[0]
    # the query's first piece, then the reads of the stored whole answer (each a read's text between its header and
    # its continuation)
    pieces = [shown_part(results[0])]
    for answer in results[1:]:
        body = shown_part(answer).split("\n", 1)[1]  # after the read's "[lines a–b of n]" header
        pieces.append(body.removesuffix("\n") if continuation(answer) else body)
    assert "".join(pieces) == expected
