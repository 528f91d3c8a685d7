"""The real OpenClaw (2026.9.6, on Node 24) as the MCP client of `mcp-offload` (clientInfo `openclaw-bundle-mcp`,
handshake protocol 2025-11-25), its model scripted (tests/llm_upstream, Chat Completions through a provider of its
config): through its `tool_call` bridge it reads 2,000 lines through continuations and a 500-hit search through its
continuation, and every line and hit reaches the model exactly once, none cut by OpenClaw.

OpenClaw's bridge shows its model the tool and the whole result as indented JSON inside an "external, untrusted
content" notice and cuts that JSON at about 20,000 characters with `[truncated]` (measured): so its answers carry no
result model in `_meta`, and its cap counts the text as a JSON string."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from llm_upstream import UpstreamServer
from support.agents import NODE24_BIN, OPENCLAW, agent_env, need
from support.line_reads import OPENCLAW_BRIDGE, check_every_line_and_hit_once, reader, server_command, store_lines

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

PREFIX = "offload__"  # OpenClaw names an MCP tool <server>__<tool>


def unwrap(result: str) -> str:
    """The text of the result, from the notice and JSON OpenClaw shows its model."""
    body = result.split("\n---\n", 1)[1].rsplit("\n<<<END_EXTERNAL_UNTRUSTED_CONTENT", 1)[0]
    return "".join(part.get("text", "") for part in json.loads(body)["result"]["content"])


def openclaw_config(path: Path, openai_base: str, **extra: object) -> None:
    """An OpenClaw config (`--config`) with a Chat Completions provider `local` at `openai_base`."""
    model = {"id": "gpt-4.1", "name": "gpt-4.1"}
    local = {"baseUrl": openai_base, "apiKey": "${LOCAL_KEY}", "api": "openai-completions", "models": [model]}
    path.write_text(json.dumps({"models": {"providers": {"local": local}}, **extra}))


def test_openclaw_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(OPENCLAW)
    store, home, work, config = tmp_path / "store", tmp_path / "home", tmp_path / "work", tmp_path / "openclaw.json"
    home.mkdir()
    work.mkdir()
    handle = store_lines(store)
    command, args = server_command(store)
    script = reader(
        handle, PREFIX + "read_large_output", PREFIX + "search_large_output", unwrap, bridge=OPENCLAW_BRIDGE
    )
    with UpstreamServer(script, seed=0) as upstream:
        openclaw_config(config, upstream.openai_url, mcp={"servers": {"offload": {"command": command, "args": args}}})
        argv = [str(OPENCLAW), "agent", "exec", "--config", str(config), "--model", "local/gpt-4.1", "--json",
                "read the lines"]  # fmt: skip
        env = agent_env(HOME=str(home), LOCAL_KEY="sk-test-key", PATH=f"{NODE24_BIN}{os.pathsep}{os.environ['PATH']}")
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("openai_chat")[-1].json
    calls = {
        c["id"]: json.loads(c["function"]["arguments"]) for m in last["messages"] for c in m.get("tool_calls") or []
    }
    shown = [(calls[m["tool_call_id"]].get("id", "").removeprefix(PREFIX), m["content"]) for m in last["messages"]
             if m["role"] == "tool"]  # fmt: skip
    assert shown and not [text[-300:] for _, text in shown if "[truncated]" in text], "OpenClaw cut an answer"
    assert not [text[:200] for _, text in shown if "mcp-offload/result" in text], "the result model reached the model"
    reads = [unwrap(text) for name, text in shown if name == "read_large_output"]
    assert "continue with read_large_output(" in reads[0]  # cut (at the read's own 5,000 tokens, under the cap)
    check_every_line_and_hit_once(reads, [unwrap(text) for name, text in shown if name == "search_large_output"])
    sizes = [len(text) for _, text in shown]
    print(f"openclaw: {len(shown)} answers, largest {max(sizes):,} characters as shown to the model")
