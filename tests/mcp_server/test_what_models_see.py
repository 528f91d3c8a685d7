"""What each tool's answer costs the model, in the real clients: the MCP SDK client, the MCP Inspector CLI and
Claude Code headless (against a scripted Anthropic API on loopback that records what it shows its model).

Claude Code shows a result's `structuredContent` when there is one, instead of the text; the others show the text.
Every tool must cost the model no more than its text whichever the client shows: here no tool sends
`structuredContent` (tools.py says why), so Claude Code's model reads exactly the text, and the table printed by
`test_token_table_per_tool_and_client` (run with -s) puts each answer's text beside what its structured form (the
`_meta` result, what Claude Code showed before) would cost.

The Inspector comes from `.ci/client-deps.sh`, Claude Code from `.ci/agents-deps.sh` (npm, under
$MCP_OFFLOAD_TEST_CLIENTS / $MCP_OFFLOAD_TEST_AGENTS, by default in ~/.cache/mcp-offload); a test whose client is
missing is skipped with a loud reason.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import mcp_offload
from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.tokens import load_counter
from support import HANG_TIMEOUT_S, text_of
from support.anthropic_recorder import Exchange, ScriptedAnthropic, client_binary, run_claude_code

_HANDLE = re.compile(r"Stored as (out_[a-z0-9]+)")
COUNTER = load_counter()


# -- the workload: real outputs, the calls a model makes on them -----------------------------------------------------
@functools.cache
def packages_json() -> str:
    """JSON of the Python distributions installed here (name, version, summary, requirements): a real API-like
    answer, the same on every run of one environment."""
    rows = []
    for dist in sorted(importlib.metadata.distributions(), key=lambda d: (d.metadata["Name"] or "").lower()):
        meta = dist.metadata
        rows.append(
            {
                "name": meta["Name"],
                "version": dist.version,
                "summary": meta["Summary"],
                "license": meta["License-Expression"] or (meta["License"] or "")[:60] or None,
                "requires": dist.requires or [],
            }
        )
    return json.dumps(rows[:80], indent=2)


@functools.cache
def source_text() -> str:
    """This package's own source code: real text with long and short lines. Without the lines holding a literal
    backslash-u escape: Claude Code turns one in a tool input into the character it names (seen with 2.1.328), so
    its run would store another text than the other clients'."""
    root = Path(mcp_offload.__file__).parent
    text = "".join(f"# ---- {p.relative_to(root)}\n{p.read_text()}" for p in sorted(root.glob("*.py")))
    return "".join(line for line in text.splitlines(keepends=True) if "\\u" not in line)[:60_000]


# (tool, arguments): "$json" / "$src" stand for the handles the two offloads returned, read from their text as a
# model would.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("offload", {"content": "<json>", "name": "packages"}),
    ("offload", {"content": "<src>", "name": "source"}),
    ("search_large_output", {"pattern": "license", "handle": "$json", "max_results": 10}),
    ("search_large_output", {"pattern": '"name": "anyio"', "handle": "$json", "literal": True, "scope": "record"}),
    ("search_large_output", {"pattern": r"^def \w+", "handle": "$src", "max_results": 15, "context_lines": 1}),
    ("search_large_output", {"pattern": "Scope", "max_results": 10}),
    ("read_large_output", {"handle": "$src", "start_line": 1, "end_line": 40}),
    ("read_large_output", {"handle": "$json", "start_line": 1, "end_line": 30}),
    ("query_large_output", {"handle": "$json", "query": ".[] | {name, version}", "compact": True}),
    ("query_large_output", {"handle": "$json", "query": ".[:2]"}),
    ("query_large_output", {"handle": "$json", "query": ".[3] | {name, version}", "compact": True}),  # one record
    ("read_large_output", {"handle": "$src", "start_line": 5, "end_line": 5}),  # one line
    ("list_outputs", {}),
]


def resolve(arguments: dict[str, Any], handles: dict[str, str], contents: dict[str, str]) -> dict[str, Any]:
    out = {}
    for key, value in arguments.items():
        if isinstance(value, str) and value.startswith("$"):
            value = handles[value[1:]]
        elif isinstance(value, str) and value.startswith("<") and value.endswith(">"):
            value = contents[value[1:-1]]
        out[key] = value
    return out


def label(tool: str, arguments: dict[str, Any]) -> str:
    shown = {k: v for k, v in arguments.items() if k != "content"}
    return f"{tool} {json.dumps(shown, ensure_ascii=False)}".replace('"$', '"')[:78]


def same_text(text: str) -> str:
    """`text` without what differs from one run to the next: handles, creation times."""
    text = re.sub(r"out_[a-z0-9]{26}", "out_…", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "<time>", text)


def tokens(text: str) -> int:
    return COUNTER.count(text)


def compact(value: Any) -> str:
    """JSON as Claude Code puts a structuredContent before its model (JSON.stringify)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Workload:
    """Runs CALLS through one client: `call(tool, arguments) -> (text, structured or None, _meta result)`."""

    def __init__(self) -> None:
        self.contents = {"json": packages_json(), "src": source_text()}
        self.handles: dict[str, str] = {}

    def arguments(self, index: int) -> dict[str, Any]:
        return resolve(CALLS[index][1], self.handles, self.contents)

    def note(self, index: int, text: str) -> None:
        if CALLS[index][0] == "offload":
            found = _HANDLE.search(text)
            assert found, text
            self.handles["json" if CALLS[index][1]["name"] == "packages" else "src"] = found.group(1)


# -- the MCP SDK client ----------------------------------------------------------------------------------------------
async def run_sdk(server: OffloadServer, mode: str) -> list[tuple[str, Any, dict[str, Any]]]:
    work, seen = Workload(), []
    async with Client(server, mode=mode) as client:
        for index, (tool, _) in enumerate(CALLS):
            result = await client.call_tool(tool, work.arguments(index))
            assert not result.is_error, text_of(result)
            work.note(index, text_of(result))
            seen.append((text_of(result), result.structured_content, result_of(result)))
    return seen


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_sdk_client_gets_text_only_and_the_result_in_meta(server: OffloadServer, mode: str) -> None:
    for text, structured, meta in await run_sdk(server, mode):
        assert structured is None and text and meta
        assert tokens(compact(meta)) > tokens(text)  # what structuredContent would have cost: more, every time


# -- the MCP Inspector CLI -------------------------------------------------------------------------------------------
def _server_command(store: Path) -> list[str]:
    return [sys.executable, "-m", "mcp_offload", "--no-config", "--store", str(store), "--session", "inspected"]


def _env_args() -> list[str]:
    """The server runs with this test's PYTHONPATH (the Inspector passes only a few variables on)."""
    return ["-e", f"PYTHONPATH={os.environ['PYTHONPATH']}"] if os.environ.get("PYTHONPATH") else []


def run_inspector(store: Path) -> list[tuple[str, Any, dict[str, Any]]]:
    """Each call is one `inspector --cli` run (its own process and MCP session); the server's named session and
    store keep the handles from one to the next."""
    inspector, work, seen = client_binary("mcp-inspector"), Workload(), []
    for index, (tool, _) in enumerate(CALLS):
        pairs = []
        for key, value in work.arguments(index).items():
            pairs += ["--tool-arg", f"{key}={json.dumps(value)}"]  # as JSON: it parses what looks like JSON
        # the Inspector gives a server 15 s to start by default: a busy machine needs more (support.HANG_TIMEOUT_S)
        command = [str(inspector), "--cli", "--connect-timeout", str(int(HANG_TIMEOUT_S * 1000))]
        command += [*_env_args(), *_server_command(store)]
        command += ["--method", "tools/call", "--tool-name", tool, *pairs]
        done = subprocess.run(command, capture_output=True, text=True, timeout=2 * HANG_TIMEOUT_S, check=False)
        assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
        result = json.loads(done.stdout)
        assert not result.get("isError"), result
        text = "".join(block["text"] for block in result["content"] if block["type"] == "text")
        work.note(index, text)
        seen.append((text, result.get("structuredContent"), result["_meta"]["mcp-offload/result"]))
    return seen


# -- Claude Code headless --------------------------------------------------------------------------------------------
def run_claude_code_workload(tmp_path: Path) -> tuple[list[Exchange], ScriptedAnthropic]:
    work = Workload()

    def next_call(done: list[Exchange]) -> tuple[str, dict[str, Any]] | None:
        if done and done[-1].shown is not None:
            work.note(len(done) - 1, done[-1].shown)
        if len(done) == len(CALLS):
            return None
        return f"mcp__offload__{CALLS[len(done)][0]}", work.arguments(len(done))

    command = _server_command(tmp_path / "store")
    api = run_claude_code(tmp_path, {"offload": {"command": command[0], "args": command[1:]}}, next_call)
    assert len(api.exchanges) == len(CALLS) and all(e.shown is not None for e in api.exchanges), api.exchanges
    return api.exchanges, api


# -- the table -------------------------------------------------------------------------------------------------------
@pytest.mark.real_agent
async def test_every_client_shows_the_text_token_table(tmp_path: Path, server: OffloadServer) -> None:
    """Per call: tokens of the text, of its structured form (had it been sent: the `_meta` result as compact JSON),
    and of what each client hands its model: the SDK client and the Inspector get no structuredContent, and Claude
    Code shows its model exactly the text. Printed as a table (-s)."""
    sdk = await run_sdk(server, "auto")
    inspector = await anyio.to_thread.run_sync(run_inspector, tmp_path / "inspector-store")
    claude, api = await anyio.to_thread.run_sync(run_claude_code_workload, tmp_path)
    # the definitions Claude Code sends its model are ours as listed (name, description, input schema), but for
    # the ellipses it spells "..."
    ours = {t["name"]: t for t in api.tool_lists[0] if t["name"].startswith("mcp__offload__")}
    listed = json.loads((Path(__file__).parents[1] / "data" / "tools_list.json").read_text())
    assert {f"mcp__offload__{t['name']}": (t["description"].replace("…", "..."), t["inputSchema"]) for t in listed} == {
        name: (t["description"], t["input_schema"]) for name, t in ours.items()
    }
    rows: list[tuple[str, int, int, int, int, int]] = []
    header = f"{'call':78s} {'text':>6s} {'struct':>7s} {'SDK':>6s} {'Insp.':>6s} {'Claude':>6s}"
    for index, (tool, arguments) in enumerate(CALLS):
        text, structured, meta = sdk[index]
        shown_sdk = tokens(compact(structured)) if structured is not None else tokens(text)
        i_text, i_structured, i_meta = inspector[index]
        assert i_structured is None and i_meta
        shown_inspector = tokens(compact(i_structured)) if i_structured is not None else tokens(i_text)
        shown_claude = tokens(claude[index].shown or "")
        row = (label(tool, arguments), tokens(text), tokens(compact(meta)), shown_sdk, shown_inspector, shown_claude)
        rows.append(row)
        # each client ran its own session: the answers are the same text but for the handles and creation times
        assert same_text(i_text) == same_text(text) == same_text(claude[index].shown or ""), index
        # so what each shows costs what the text costs (compared without the handles, whose tokens vary by run)
        assert tokens(same_text(claude[index].shown or "")) <= tokens(same_text(text)), row
    print("\n" + header)
    for row in rows:
        print(f"{row[0]:78s} {row[1]:6d} {row[2]:7d} {row[3]:6d} {row[4]:6d} {row[5]:6d}")
    total = [sum(column) for column in zip(*(row[1:] for row in rows), strict=True)]
    print(f"{'total':78s} {total[0]:6d} {total[1]:7d} {total[2]:6d} {total[3]:6d} {total[4]:6d}")
    assert total[1] > total[0] * 1.1  # the structured form would have cost more than 10 % over the text
