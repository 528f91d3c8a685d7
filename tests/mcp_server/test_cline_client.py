"""The real Cline (3.0.65) as the MCP client of `mcp-offload` (clientInfo `@cline/core`, handshake protocol
2024-11-05), its model scripted (tests/llm_upstream, Chat Completions through its openai-compatible provider): it
reads 2,000 lines through continuations and a 500-hit search through its continuation, and every line and hit
reaches the model exactly once, none cut by Cline.

Cline shows its model the whole `CallToolResult` as JSON (`_meta` included, the text escaped) and cuts it to 8,000
characters from the middle with `...[truncated N chars]...` (measured): so its answers carry no result model in
`_meta`, and its cap counts the text as a JSON string. Its default MCP start-up timeout is 3 s, under what the server
takes on a loaded machine: the settings give it 60."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from llm_upstream import UpstreamServer
from support.agents import CLINE, agent_env, need
from support.line_reads import check_every_line_and_hit_once, reader, server_command, store_lines

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

TRUNCATED = "...[truncated "
PREFIX = "offload__"  # Cline names an MCP tool <server>__<tool>


def cline_data_dir(data: Path, openai_base: str) -> None:
    """A Cline data directory (`--data-dir`) with an openai-compatible provider at `openai_base`, telemetry off."""
    settings = data / "settings"
    settings.mkdir(parents=True)
    provider = {"provider": "openai-compatible", "apiKey": "sk-test-key", "model": "gpt-4.1", "baseUrl": openai_base}
    (settings / "providers.json").write_text(json.dumps({
        "version": 1, "lastUsedProvider": "openai-compatible", "modes": {},
        "providers": {"openai-compatible": {
            "settings": provider, "updatedAt": "2026-01-01T00:00:00.000Z", "tokenSource": "manual",
        }},
    }))  # fmt: skip
    (settings / "global-settings.json").write_text('{"telemetryOptOut": true}')


def unwrap(result: str) -> str:
    """The text of the result, from the JSON Cline shows its model."""
    return "".join(part.get("text", "") for part in json.loads(result)["content"])


def test_cline_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(CLINE)
    store, home, work, data = tmp_path / "store", tmp_path / "home", tmp_path / "work", tmp_path / "cline"
    home.mkdir()
    work.mkdir()
    handle = store_lines(store)
    command, args = server_command(store)
    script = reader(handle, PREFIX + "read_large_output", PREFIX + "search_large_output", unwrap)
    with UpstreamServer(script, seed=0) as upstream:
        cline_data_dir(data, upstream.openai_url)
        server = {"timeout": 60, "transport": {"type": "stdio", "command": command, "args": args}}
        (data / "settings" / "cline_mcp_settings.json").write_text(json.dumps({"mcpServers": {"offload": server}}))
        argv = [str(CLINE), "--data-dir", str(data), "--json", "read the lines"]
        done = subprocess.run(argv, env=agent_env(HOME=str(home)), cwd=work, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("openai_chat")[-1].json
    calls = {c["id"]: c["function"]["name"] for m in last["messages"] for c in m.get("tool_calls") or []}
    shown = [(calls[m["tool_call_id"]].removeprefix(PREFIX), m["content"]) for m in last["messages"]
             if m["role"] == "tool"]  # fmt: skip
    assert not [text[:200] for _, text in shown if TRUNCATED in text], "Cline cut an answer"
    assert not [text[:200] for _, text in shown if "mcp-offload/result" in text], "the result model reached the model"
    reads = [unwrap(text) for name, text in shown if name == "read_large_output"]
    assert "[cut at Cline's 7,500-byte cap: continue with read_large_output(" in reads[0]
    check_every_line_and_hit_once(reads, [unwrap(text) for name, text in shown if name == "search_large_output"])
    sizes = [len(text) for _, text in shown]
    print(f"cline: {len(shown)} answers, largest {max(sizes):,} characters as shown to the model")
    assert max(sizes) <= 8_000
