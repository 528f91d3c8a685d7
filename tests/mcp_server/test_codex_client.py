"""The real Codex CLI (0.169.0) as the MCP client of `mcp-offload`, its model scripted (tests/llm_upstream): it reads
2,000 lines (~18 KB) through continuations and a 500-hit search through its continuation, and every line and hit
reaches the model exactly once, with no answer cut by Codex (its `…N tokens truncated…` marker).

Without the cap, Codex showed the model 11,988 bytes of the 2,000-line read with lines 92-188 missing (issue 26)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import UpstreamServer
from llm_upstream.script import Step, ToolCall, Turn, reply
from mcp_offload import SessionScope, Settings, build_services, offload
from support.agents import CODEX, agent_env, need
from support.continuations import continuation

pytestmark = pytest.mark.real_agent  # runs a real agent or proxy: .ci/run's real-agent stage

SESSION = "codex-test"
LINES = "".join(f"line {i:05d} " + "x" * (i % 7) + "\n" for i in range(1, 2001))
TRUNCATED = re.compile(r"…\d+ tokens truncated…")
NAMESPACE = "mcp__offload"  # Codex groups an MCP server's tools in one namespace tool


def store_lines(store: Path) -> str:
    async def run() -> str:
        services = build_services(Settings(store=str(store)))
        try:
            return (await offload(services, SessionScope.named(SESSION), LINES, name="lines")).handle
        finally:
            await services.aclose()

    return asyncio.run(run())


def mcp_call(name: str, arguments: dict[str, Any]) -> ToolCall:
    return ToolCall(name, dict(arguments), namespace=NAMESPACE)


def reader(handle: str) -> Callable[[Turn], Step]:
    """The model: read lines 1-2,000, follow each continuation, search 500 hits, follow that, then answer."""

    def step(turn: Turn) -> Step:
        if NAMESPACE not in turn.tool_names:
            return reply("Scripted session")
        done = [e for e in turn.exchanges() if e.name in ("read_large_output", "search_large_output")]
        if not done:
            return reply(mcp_call("read_large_output", {"handle": handle, "start_line": 1, "end_line": 2000}))
        following = continuation(done[-1].result or "")
        if following is not None and len(done) < 60:
            return reply(mcp_call("read_large_output", following))
        if not any(e.name == "search_large_output" for e in done):
            search = {"pattern": "line", "handle": handle, "max_results": 500}
            return reply(mcp_call("search_large_output", search))
        return reply("done")

    return step


def test_codex_reads_every_line_once_through_continuations(tmp_path: Path) -> None:
    need(CODEX)
    store, home, work = tmp_path / "store", tmp_path / "home", tmp_path / "work"
    (home / ".codex").mkdir(parents=True)
    work.mkdir()
    handle = store_lines(store)
    with UpstreamServer(reader(handle), seed=0) as upstream:
        (home / ".codex" / "config.toml").write_text(
            f'model = "gpt-5"\nmodel_provider = "local"\n[model_providers.local]\nname = "local"\n'
            f'base_url = "{upstream.openai_url}"\nenv_key = "OPENAI_API_KEY"\nwire_api = "responses"\n'
            f"[mcp_servers.offload]\ncommand = {json.dumps(str(Path(sys.executable).parent / 'mcp-offload'))}\n"
            f'args = ["--store", {json.dumps(str(store))}, "--session", "{SESSION}", "--no-config"]\n'
            "startup_timeout_sec = 60\ntool_timeout_sec = 120\nrequired = true\n"
            'default_tools_approval_mode = "approve"\n'
        )
        done = subprocess.run(
            [str(CODEX), "exec", "--skip-git-repo-check", "read the lines"],
            env=agent_env(HOME=str(home), OPENAI_API_KEY="sk-test-key"),
            cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("responses")[-1].json
    calls = {i["call_id"]: i["name"] for i in last["input"] if i.get("type") == "function_call"}
    shown = [
        (calls[i["call_id"]], "".join(p.get("text", "") for p in i["output"]) if isinstance(i["output"], list)
         else i["output"])
        for i in last["input"] if i.get("type") == "function_call_output"
    ]  # fmt: skip
    assert not [text[:200] for _, text in shown if TRUNCATED.search(text)], "Codex cut an answer"
    reads = [text for name, text in shown if name == "read_large_output"]
    searches = [text for name, text in shown if name == "search_large_output"]
    assert len(searches) == 1
    # the read of lines 1-2,000: its answers come first, each line exactly once
    lines = [line for text in reads for line in re.findall(r"^line \d{5} x*$", text, re.M)]
    assert lines == LINES.splitlines()
    # the search: 500 hits (of 2,000), shown in part, the rest through the reads that continue it
    hits = [int(n) for text in [*searches, *reads] for n in re.findall(r"^(\d+): line \d{5}", text, re.M)]
    assert hits == list(range(1, 501))
    sizes = [len(text.encode()) for _, text in shown]
    print(f"codex: {len(shown)} answers, largest {max(sizes):,} bytes as shown to the model")
    assert max(sizes) <= 12_000
