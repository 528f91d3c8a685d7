"""The real opencode (1.18.33) as the MCP client of `mcp-offload` (clientInfo `opencode`, handshake protocol
2025-11-25), its model scripted (tests/llm_upstream, Chat Completions through an openai-compatible provider of its
inline config): it reads 2,000 lines through continuations and a 500-hit search through its continuation, and every
line and hit reaches the model exactly once, none cut by opencode.

opencode keeps the first 2,000 lines or 51,200 bytes of an MCP result and saves the whole to a file ("...N bytes
truncated..."; measured: 2,000 lines and 51,200 bytes shown whole, one more of either cut), so a read of 2,000 lines
(2,001 with its header line) would lose its end, and an 82 KB jq answer most of itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llm_upstream import Script, UpstreamServer
from support import capped_answers
from support.agents import OPENCODE, agent_env, need
from support.line_reads import check_every_line_and_hit_once, reader, server_command, store_lines

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

PREFIX = "offload_"  # opencode names an MCP tool <server>_<tool>
QUIET = {f"OPENCODE_DISABLE_{name}": "1" for name in ("MODELS_FETCH", "AUTOUPDATE", "SHARE", "LSP_DOWNLOAD",
                                                       "DEFAULT_PLUGINS")}  # fmt: skip


def run_opencode(script: Script, home: Path, work: Path, command: str, args: list[str]) -> list[tuple[str, str]]:
    """opencode run with `mcp-offload` (`command` `args`) as its MCP server and `script` as its model: (tool name
    without the server's prefix, the text its model saw) of every tool result in the last request."""
    with UpstreamServer(script, seed=0) as upstream:
        local = {"npm": "@ai-sdk/openai-compatible", "models": {"gpt-4.1": {}},
                 "options": {"baseURL": upstream.openai_url, "apiKey": "sk-test-key"}}  # fmt: skip
        config = {"autoupdate": False, "provider": {"local": local},
                  "mcp": {"offload": {"type": "local", "command": [command, *args], "enabled": True}}}  # fmt: skip
        xdg = {f"XDG_{kind}_HOME": str(home / kind.lower()) for kind in ("CONFIG", "DATA", "CACHE", "STATE")}
        env = agent_env(HOME=str(home), OPENCODE_CONFIG_CONTENT=json.dumps(config), **xdg, **QUIET)
        argv = [str(OPENCODE), "run", "--format", "json", "-m", "local/gpt-4.1", "read the lines"]
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("openai_chat")[-1].json
    calls = {c["id"]: c["function"]["name"] for m in last["messages"] for c in m.get("tool_calls") or []}
    return [(calls[m["tool_call_id"]].removeprefix(PREFIX), m["content"]) for m in last["messages"]
            if m["role"] == "tool"]  # fmt: skip


def test_opencode_gets_a_big_answer_whole_in_pieces(tmp_path: Path) -> None:
    need(OPENCODE)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle, expected = capped_answers.prepare(store)
    command, args = capped_answers.server_command(store)
    script = capped_answers.model(handle, PREFIX + "query_large_output", PREFIX + "read_large_output")
    results = [text for _, text in run_opencode(script, home, work, command, args)]
    assert not [r[:200] for r in results if "bytes truncated..." in r], "opencode cut an answer"
    assert len(results) >= 2 and "cut at opencode's 50,000-byte / 2,000-line cap" in results[0]
    assert capped_answers.rebuilt(results) == expected


def test_opencode_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(OPENCODE)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle = store_lines(store)
    command, args = server_command(store)
    script = reader(handle, PREFIX + "read_large_output", PREFIX + "search_large_output")
    shown = run_opencode(script, home, work, command, args)
    assert not [text[:200] for _, text in shown if "bytes truncated..." in text], "opencode cut an answer"
    reads = [text for name, text in shown if name == "read_large_output"]
    assert "continue with read_large_output(" in reads[0]
    check_every_line_and_hit_once(reads, [text for name, text in shown if name == "search_large_output"])
    assert all(text.count("\n") < 2_000 for _, text in shown)
    sizes = [len(text.encode()) for _, text in shown]
    print(f"opencode: {len(shown)} answers, largest {max(sizes):,} bytes as shown to the model")
