"""A record lookup in Claude Code (2.1.328, headless, its model scripted on the validating upstream): one order in a
2.2 MB JSON file, asked for through the filesystem MCP server directly and through the proxy (issue 34, point 2).

- Directly (Claude Code's own handling): the result is over Claude Code's limit, so it saves it to a file and shows a
  notice; the model greps the file for the order (its Bash tool: 2.1.328 offers it no Grep tool here) and gets the
  one line holding the id, the leanest answer there is (it does not even hold the rest of the order).
- Through the proxy: the result is stored and shown as a reference; the model searches it as search_large_output's own
  example does (literal, scope="record") and gets the whole order.

The model's history (the last request's messages) through the proxy must end no larger than Claude Code's own.
Run with -s to print the numbers (o200k tokens of the lookup answer and of the last request's messages, both ways).
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llm_upstream import UpstreamServer
from llm_upstream.script import Step, ToolCall, Turn, reply
from mcp_offload.tokens import load_counter
from support import HANG_TIMEOUT_S
from support.agents import CLAUDE, agent_env, need
from support.proxy import npm_entry

pytestmark = pytest.mark.real_agent  # runs a real agent and proxy: .ci/run's real-agent stage

ORDER = "ORD-004321"
COUNTER = load_counter()


def orders_file(path: Path) -> dict[str, Any]:
    """~2.2 MB of pretty-printed JSON, an API export of orders; returns the order the model looks for."""
    rng = random.Random(34)
    orders = [
        {
            "order": f"ORD-{i:06d}",
            "customer": f"cust-{rng.randint(1, 9_999):05d}",
            "status": rng.choice(["placed", "paid", "shipped", "delivered", "returned"]),
            "placed": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "currency": rng.choice(["EUR", "USD", "GBP"]),
            "total": round(rng.uniform(5, 900), 2),
            "items": rng.randint(1, 6),
        }
        for i in range(11_500)
    ]
    path.write_text(json.dumps({"export": "orders", "generated": "2026-11-27", "orders": orders}, indent=2))
    return next(o for o in orders if o["order"] == ORDER)


def tool_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if block.get("type") == "text")


def messages_tokens(body: dict[str, Any]) -> int:
    """The history as the model reads it: every message's text, tool calls and tool results (o200k)."""
    total = 0
    for message in body["messages"]:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block["type"] == "text":
                total += COUNTER.count(block["text"])
            elif block["type"] == "tool_use":
                total += COUNTER.count(block["name"] + json.dumps(block["input"], ensure_ascii=False))
            elif block["type"] == "tool_result":
                total += COUNTER.count(tool_text(block["content"]))
    return total


def lookup_model(read_tool: str, lookup: Callable[[str], ToolCall]) -> Callable[[Turn], Step]:
    """Read the file, then look the order up in what the read gave back (`lookup(first result)`), then answer."""

    def step(turn: Turn) -> Step:
        if read_tool not in turn.tool_names:
            return reply("Order lookup")  # a title request, without tools
        done = turn.exchanges()
        if not done:
            return reply(ToolCall(read_tool, {"path": "orders.json"}))
        if len(done) == 1:
            return reply(lookup(done[0].result or ""))
        return reply(f"Order {ORDER}: see above.")

    return step


def grep_file(first: str) -> ToolCall:
    """Claude Code's own way: its notice says the result was saved; grep the file for the order's line."""
    assert "saved to" in first, first[:1500]
    return ToolCall("Bash", {"command": f"grep -n {ORDER} orders.json", "description": "Find the order"})


def search_stored(first: str) -> ToolCall:
    """Through the proxy: the reference names the handle; search it as search_large_output's own example does."""
    handle = re.search(r"Stored as (out_[a-z0-9]+)", first)
    assert handle, first[:1500]
    arguments = {"pattern": ORDER, "handle": handle.group(1), "literal": True, "scope": "record"}
    return ToolCall("mcp__offload__search_large_output", arguments)


def as_at_home(body: dict[str, Any], home: Path, work: Path) -> dict[str, Any]:
    """`body` as a user's run would send it: HOME /home/you, the project in /home/you/shop. The test's directories
    are ~80 characters longer, and Claude Code's notice names the file it saved (under HOME, in a folder named after
    the project's path) three times: ~100 tokens of the direct history that a user's would not have."""
    text = json.dumps(body, ensure_ascii=False)
    for path, usual in ((str(work), "/home/you/shop"), (str(home), "/home/you")):
        text = text.replace(path, usual).replace(re.sub(r"[^A-Za-z0-9]", "-", path), usual.replace("/", "-"))
    assert str(home) not in text and str(work) not in text
    result: dict[str, Any] = json.loads(text)
    return result


def tool_results(body: dict[str, Any]) -> list[str]:
    return [
        tool_text(block["content"])
        for message in body["messages"] if isinstance(message["content"], list)
        for block in message["content"] if block.get("type") == "tool_result"
    ]  # fmt: skip


def run(root: Path, servers: dict[str, Any], model: Callable[[Turn], Step]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Claude Code headless in `root`/work with only `servers`: its last request as sent, and as at a user's home."""
    home, work = root / "home", root / "work"
    home.mkdir()
    config = root / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    with UpstreamServer(model, seed=0) as upstream:
        env = agent_env(
            HOME=str(home), ANTHROPIC_BASE_URL=upstream.base_url, ANTHROPIC_API_KEY="sk-ant-test-key", IS_SANDBOX="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", ENABLE_TOOL_SEARCH="false",
            MCP_TIMEOUT=str(int(HANG_TIMEOUT_S * 1000)),  # a server's start on a loaded machine (default: 30 s)
        )  # fmt: skip
        argv = [str(CLAUDE), "-p", f"What is order {ORDER} in orders.json?", "--output-format", "json",
                "--dangerously-skip-permissions", "--mcp-config", str(config), "--strict-mcp-config"]  # fmt: skip
        done = subprocess.run(argv, env=env, cwd=work, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
        last = upstream.received("anthropic")[-1].json
    return last, as_at_home(last, home, work)


def test_a_lookup_through_the_proxy_costs_no_more_than_claude_codes_own(tmp_path: Path) -> None:
    need(CLAUDE)
    sent: dict[str, dict[str, Any]] = {}
    at_home: dict[str, dict[str, Any]] = {}
    for side in ("direct", "proxy"):
        work = tmp_path / side / "work"
        work.mkdir(parents=True)
        wanted = orders_file(work / "orders.json")
        fs = npm_entry("server-filesystem", str(work))
        if side == "direct":
            servers, model = {"fs": fs}, lookup_model("mcp__fs__read_text_file", grep_file)
        else:
            (tmp_path / "servers.json").write_text(json.dumps({"mcpServers": {"fs": fs}}))
            args = ["-m", "mcp_offload", "--no-config", "--store", str(tmp_path / "store")]
            offload = {"command": sys.executable, "args": [*args, "--config", str(tmp_path / "servers.json")]}
            servers, model = {"offload": offload}, lookup_model("mcp__offload__fs__read_text_file", search_stored)
        sent[side], at_home[side] = run(tmp_path / side, servers, model)
        first, lookup = tool_results(sent[side])
        print(
            f"\n{side}: first result {COUNTER.count(first)} tokens, lookup answer {COUNTER.count(lookup)}, history "
            f"{messages_tokens(sent[side])} (at a user's home: {messages_tokens(at_home[side])})\n{lookup}"
        )
    direct_lookup = tool_results(sent["direct"])[1]
    assert direct_lookup.endswith(f'"order": "{ORDER}",')  # Claude Code's grep found the order's line
    head, record = tool_results(sent["proxy"])[1].split("\n")
    assert re.fullmatch(r"\.orders\[4321\] \[lines [\d,]+–[\d,]+\]:", head)  # the path and the lines, no more
    assert json.loads(record) == wanted and "\n" not in record  # the whole order, on one line
    assert messages_tokens(sent["proxy"]) <= messages_tokens(sent["direct"])
