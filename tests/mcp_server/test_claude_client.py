"""The real Claude Code (2.1.328) as the MCP client of `mcp-offload` (it speaks the sessionless 2026-07-28 protocol,
clientInfo name `claude-code`), its model scripted: a jq answer of ~82 KB arrives whole, in one piece, and stays in
the model's context.

Without a size hint, Claude Code saves an MCP result over 50,000 characters to a file and shows the model a 2 KB
preview (`<persisted-output>`), and cuts one over ~25,000 tokens. Our tools declare `anthropic/maxResultSizeChars`
in their `_meta` (client_caps.TOOL_META), which Claude Code reads: a result up to that size stays inline, so its cap
is 95,000 bytes from 2.1.328 on, and an answer over its default inline size reaches the model whole."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llm_upstream import UpstreamServer
from mcp_offload.mcp_server.client_caps import RESULT_SIZE_HINT_CHARS
from support.agents import CLAUDE, agent_env, need
from support.capped_answers import model, prepare, rebuilt, server_command

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage
CLAUDE_INLINE_CHARS = 50_000  # what Claude Code keeps inline of an MCP tool that declares no size hint (measured)


def test_claude_code_keeps_an_answer_over_its_default_inline_size_by_the_tools_hint(tmp_path: Path) -> None:
    need(CLAUDE)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    handle, expected = prepare(store)
    command, args = server_command(store)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"offload": {"command": command, "args": args}}}))
    script = model(handle, "mcp__offload__query_large_output", "mcp__offload__read_large_output")
    with UpstreamServer(script, seed=0) as upstream:
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
    assert not [r[:200] for r in results if "persisted-output" in r or "truncated" in r or "saved" in r[:300]]
    assert len(results) == 1, [r[-300:] for r in results]  # whole: no continuation to follow
    assert CLAUDE_INLINE_CHARS < len(results[0]) <= RESULT_SIZE_HINT_CHARS, len(results[0])
    assert rebuilt(results) == expected
    print(f"claude code: one answer of {len(results[0]):,} characters kept inline")
