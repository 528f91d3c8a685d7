"""The real GitHub Copilot CLI (1.0.102) as the MCP client of `mcp-offload` (clientInfo `copilot-cli`; it probes
`server/discover`, then opens the 2025-11-25 handshake: serve/stdio_eras.py), its model scripted (tests/llm_upstream,
Chat Completions): it reads 2,000 lines through continuations and a 500-hit search through its continuation, and
every line and hit reaches the model exactly once, none saved away by Copilot.

Copilot CLI replaces an MCP result over 20,480 characters by "Output too large to read at once (N KB). Saved to:
/tmp/…" and a 500-character preview (measured: 20,480 shown whole, 20,481 saved away)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from llm_upstream import UpstreamServer
from llm_upstream.script import Step, ToolCall, Turn, reply
from mcp_offload import SessionScope, Settings, build_services, offload
from support.agents import COPILOT, copilot_env, need
from support.continuations import continuation

SESSION = "copilot-test"
LINES = "".join(f"line {i:05d} " + "x" * (i % 7) + "\n" for i in range(1, 2001))
SAVED_AWAY = "Output too large to read at once"
PREFIX = "offload-"  # Copilot names an MCP tool <server>-<tool>


def store_lines(store: Path) -> str:
    async def run() -> str:
        services = build_services(Settings(store=str(store)))
        try:
            return (await offload(services, SessionScope.named(SESSION), LINES, name="lines")).handle
        finally:
            await services.aclose()

    return asyncio.run(run())


def reader(handle: str) -> Callable[[Turn], Step]:
    """The model: read lines 1-2,000, follow each continuation, search 500 hits, follow that, then answer."""
    read, search = PREFIX + "read_large_output", PREFIX + "search_large_output"

    def step(turn: Turn) -> Step:
        if read not in turn.tool_names:
            return reply("Scripted session")
        done = [e for e in turn.exchanges() if e.name in (read, search)]
        if not done:
            return reply(ToolCall(read, {"handle": handle, "start_line": 1, "end_line": 2000}))
        following = continuation(done[-1].result or "")
        if following is not None and len(done) < 60:
            return reply(ToolCall(read, following))
        if not any(e.name == search for e in done):
            return reply(ToolCall(search, {"pattern": "line", "handle": handle, "max_results": 500}))
        return reply("done")

    return step


def test_copilot_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(COPILOT)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle = store_lines(store)
    servers = {"offload": {
        "type": "local", "command": str(Path(sys.executable).parent / "mcp-offload"), "tools": ["*"],
        "args": ["--store", str(store), "--session", SESSION, "--no-config"],
    }}  # fmt: skip
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    with UpstreamServer(reader(handle), seed=0) as upstream:
        argv = [str(COPILOT), "-p", "read the lines", "--allow-all-tools", "-s",
                "--additional-mcp-config", f"@{home / 'mcp.json'}"]  # fmt: skip
        done = subprocess.run(argv, env=copilot_env(home, upstream.openai_url), cwd=work, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("openai_chat")[-1].json
    calls = {c["id"]: c["function"]["name"] for m in last["messages"] for c in m.get("tool_calls") or []}
    shown: list[tuple[str, str]] = [
        (calls[m["tool_call_id"]].removeprefix(PREFIX), text_of(m["content"]))
        for m in last["messages"] if m["role"] == "tool"
    ]  # fmt: skip
    assert not [text[:200] for _, text in shown if SAVED_AWAY in text], "Copilot saved an answer away"
    reads = [text for name, text in shown if name == "read_large_output"]
    searches = [text for name, text in shown if name == "search_large_output"]
    assert len(searches) == 1 and len(reads) >= 2
    assert "[cut at Copilot CLI's 20,000-byte cap: continue with read_large_output(" in reads[0]
    lines = [line for text in reads for line in re.findall(r"^line \d{5} x*$", text, re.M)]
    assert lines == LINES.splitlines()
    hits = [int(n) for text in [*searches, *reads] for n in re.findall(r"^(\d+): line \d{5}", text, re.M)]
    assert hits == list(range(1, 501))
    sizes = [len(text) for _, text in shown]
    print(f"copilot: {len(shown)} answers, largest {max(sizes):,} characters as shown to the model")
    assert max(sizes) <= 20_480


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])
