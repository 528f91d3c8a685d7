"""The real GitHub Copilot CLI (1.0.102) as the MCP client of `mcp-offload` (clientInfo `copilot-cli`; it probes
`server/discover`, then opens the 2025-11-25 handshake: serve/stdio_eras.py), its model scripted (tests/llm_upstream,
Chat Completions): it reads 2,000 lines through continuations and a 500-hit search through its continuation, and
every line and hit reaches the model exactly once, none saved away by Copilot.

Copilot CLI replaces an MCP result over 20,480 characters by "Output too large to read at once (N KB). Saved to:
/tmp/…" and a 500-character preview (measured: 20,480 shown whole, 20,481 saved away)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import UpstreamServer
from support.agents import COPILOT, copilot_env, need
from support.line_reads import check_every_line_and_hit_once, reader, server_command, store_lines

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

SAVED_AWAY = "Output too large to read at once"
PREFIX = "offload-"  # Copilot names an MCP tool <server>-<tool>


def test_copilot_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(COPILOT)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle = store_lines(store)
    command, args = server_command(store)
    servers = {"offload": {"type": "local", "command": command, "args": args, "tools": ["*"]}}
    (home / "mcp.json").write_text(json.dumps({"mcpServers": servers}))
    script = reader(handle, PREFIX + "read_large_output", PREFIX + "search_large_output")
    with UpstreamServer(script, seed=0) as upstream:
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
    assert "[cut at Copilot CLI's 20,000-byte cap: continue with read_large_output(" in reads[0]
    check_every_line_and_hit_once(reads, [text for name, text in shown if name == "search_large_output"])
    sizes = [len(text) for _, text in shown]
    print(f"copilot: {len(shown)} answers, largest {max(sizes):,} characters as shown to the model")
    assert max(sizes) <= 20_480


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])
