"""The real Gemini CLI (0.61.0) as the MCP client of `mcp-offload` (handshake protocol 2025-06-18, clientInfo name
`gemini-cli-mcp-client`), its model scripted: a jq answer of ~82 KB arrives in pieces that Gemini CLI shows whole,
and following their continuations gives the whole answer back.

Without the cap, Gemini CLI keeps the first 8,000 and last 32,000 characters of a result over 40,000 ("Output too
large. Showing first 8,000 and last 32,000 characters") and saves the whole to a file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llm_upstream import UpstreamServer
from support.agents import GEMINI, agent_env, need
from support.capped_answers import model, prepare, rebuilt, server_command

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

WRAPPER = ("<untrusted_context>\n", "\n</untrusted_context>")  # Gemini CLI wraps an MCP tool's text so


def unwrap(result: str) -> str:
    return result.removeprefix(WRAPPER[0]).removesuffix(WRAPPER[1])


def test_gemini_cli_gets_a_big_answer_whole_in_pieces(tmp_path: Path) -> None:
    need(GEMINI)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    (home / ".gemini").mkdir(parents=True)
    work.mkdir()
    handle, expected = prepare(store)
    command, args = server_command(store)
    (home / ".gemini" / "settings.json").write_text(json.dumps({
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"maxAttempts": 2, "disableAutoUpdate": True}, "privacy": {"usageStatisticsEnabled": False},
        "mcpServers": {"offload": {"command": command, "args": args, "trust": True}},
    }))  # fmt: skip
    script = model(handle, "mcp_offload_query_large_output", "mcp_offload_read_large_output", unwrap)
    with UpstreamServer(script, seed=0) as upstream:
        env = agent_env(HOME=str(home), GEMINI_API_KEY="test-gemini-key", GOOGLE_GEMINI_BASE_URL=upstream.base_url,
                        GEMINI_CLI_TRUST_WORKSPACE="true", NO_COLOR="1")  # fmt: skip
        argv = [str(GEMINI), "-p", "get the items", "--yolo", "-m", "gemini-2.5-flash"]
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("gemini")[-1].json
    results = [
        unwrap(part["functionResponse"]["response"]["output"])
        for content in last["contents"] for part in content.get("parts", []) if "functionResponse" in part
    ]  # fmt: skip
    assert not [r[:200] for r in results if "Output too large" in r]
    assert len(results) >= 3 and "cut at Gemini CLI's 38,000-byte cap" in results[0]
    assert rebuilt(results) == expected
