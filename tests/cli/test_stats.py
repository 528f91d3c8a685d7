"""`mcp-offload stats`: the figures a real server process recorded survive its restart, as a table and as JSON."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from mcp_offload.mcp_server.tools import result_of


def _command() -> list[str]:
    script = Path(sys.executable).with_name("mcp-offload")
    return [str(script)] if script.exists() else [shutil.which("mcp-offload") or "mcp-offload"]


def _stats(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*_command(), "stats", *args], capture_output=True, text=True, timeout=60, check=False)


async def test_stats_survive_a_restart_of_the_server(tmp_path: Path) -> None:
    store = tmp_path / "store"
    big = "".join(f"{i} a log line with some words\n" for i in range(5_000))
    for _run in range(2):  # two server processes, one after the other
        params = StdioServerParameters(command=_command()[0], args=["--store", str(store)])
        async with Client(params, mode="legacy", read_timeout_seconds=30) as client:
            r = await client.call_tool("offload", {"content": big, "name": "log"})
            handle = result_of(r)["handle"]
            await client.call_tool("read_large_output", {"handle": handle, "start_line": 1, "end_line": 5})
    done = _stats("--store", str(store), "--json", "--days", "3")
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert len(doc["days"]) == 3
    total = doc["total"]
    assert total["results_offloaded"] == 2 and total["retrievals"] == 2
    assert total["tokens_kept_out"] > 2 * 40_000  # each offload kept ~50k tokens out, minus its reference
    assert total["tokens_net_saved"] == total["tokens_kept_out"] - total["tokens_retrieved"]
    today = doc["days"][-1]
    assert {(r["server"], r["tool"]) for r in today["rows"]} == {("", "offload"), ("", "read_large_output")}

    table = _stats("--store", str(store))
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:3] == ["day", "server", "tool"]
    assert any(line.split()[1:3] == ["(direct)", "offload"] for line in lines)
    assert lines[-2].split()[:2] == ["all", "total"] and lines[-2].split()[-1] == f"{total['tokens_net_saved']:,}"


def test_stats_of_an_empty_store_and_bad_days(tmp_path: Path) -> None:
    (tmp_path / "store" / "v1").mkdir(parents=True)  # a store a server created, nothing recorded yet
    empty = _stats("--store", str(tmp_path / "store"))
    assert empty.returncode == 0 and "No savings recorded in the last 7 day(s)." in empty.stdout
    bad = _stats("--store", str(tmp_path), "--days", "0")
    assert bad.returncode == 2 and bad.stderr.strip() == "mcp-offload stats: --days must be between 1 and 400"


def test_stats_of_a_store_that_does_not_exist_says_so(tmp_path: Path) -> None:
    """A mistyped --store must not read as "nothing saved", nor create the directory."""
    missing = _stats("--store", str(tmp_path / "typo"))
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.strip() == (
        f"mcp-offload stats: no store at {tmp_path / 'typo'}: the directory does not exist "
        "(check --store or MCP_OFFLOAD_STORE)"
    )
    assert not (tmp_path / "typo").exists()


def test_stats_json_into_a_closed_pipe_has_no_traceback(tmp_path: Path) -> None:
    """`mcp-offload stats --json | head -1`: the reader goes away early; no BrokenPipeError traceback."""
    (tmp_path / "store" / "v1").mkdir(parents=True)
    exe = Path(sys.executable).with_name("mcp-offload")
    done = subprocess.run(
        ["sh", "-c", f"'{exe}' stats --json --days 400 --store '{tmp_path / 'store'}' | head -c 1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "{" and done.stderr == "", done.stderr
