"""`mcp-offload` launched as a real stdio subprocess, exactly as Claude Desktop does (command + args + env)."""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import anyio
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_offload.mcp_server.tools import result_of
from support import ERAS, HANG_TIMEOUT_S, text_of


def _command() -> str:
    """The installed console script (what a client config names), next to this Python."""
    script = Path(sys.executable).with_name("mcp-offload")
    return str(script) if script.exists() else shutil.which("mcp-offload") or "mcp-offload"


def _params(store: Path, *extra: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=_command(), args=["--store", str(store), *extra], env=env)


@pytest.mark.parametrize("mode", ERAS)
async def test_stdio_end_to_end(tmp_path: Path, mode: str) -> None:
    big = "".join(f"{i} log line\n" for i in range(50_000)) + "the needle is here\n"
    errlog = (tmp_path / "stderr.txt").open("w")
    async with Client(_params(tmp_path / "store"), mode=mode, read_timeout_seconds=30) as client:
        assert {t.name for t in (await client.list_tools()).tools} >= {"offload", "read_large_output"}
        r = await client.call_tool("offload", {"content": big, "name": "log"})
        handle = result_of(r)["handle"]
        r = await client.call_tool("search_large_output", {"pattern": "needle", "literal": True})
        assert result_of(r)["matches"][0]["line"] == 50_001
        r = await client.call_tool("read_large_output", {"handle": handle, "start_line": 50_001})
        assert result_of(r)["text"] == "the needle is here\n"
    errlog.close()


async def test_two_processes_on_one_store_are_isolated(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with Client(_params(store)) as alice, Client(_params(store)) as bob:
        h = result_of(await alice.call_tool("offload", {"content": "alice only\n" * 500}))["handle"]
        r = await bob.call_tool("read_large_output", {"handle": h})
        assert r.is_error and "no output" in text_of(r).lower()
        assert result_of(await bob.call_tool("list_outputs", {}))["outputs"] == []
        assert result_of(await bob.call_tool("search_large_output", {"pattern": "alice"}))["total_matches"] == 0
        r = await alice.call_tool("read_large_output", {"handle": h, "end": 10})
        assert result_of(r)["text"] == "alice only"


async def test_server_answers_while_a_runaway_jq_is_stopped(tmp_path: Path) -> None:
    async with Client(_params(tmp_path / "store", "--jq-timeout", "3"), read_timeout_seconds=30) as client:
        h = result_of(await client.call_tool("offload", {"content": '{"a": [1, 2, 3]}'}))["handle"]
        results: dict[str, types.CallToolResult] = {}

        async def runaway() -> None:
            results["runaway"] = await client.call_tool("query_large_output", {"handle": h, "query": "def f: f; f"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(runaway)
            await anyio.sleep(0.3)
            started = time.perf_counter()
            for _ in range(5):  # other calls keep being answered quickly meanwhile
                r = await client.call_tool("query_large_output", {"handle": h, "query": ".a | length"})
                assert result_of(r)["result"].strip() == "3"
                r = await client.call_tool("read_large_output", {"handle": h, "start": 1, "end": 4})
                assert result_of(r)["text"] == '{"a"'
            assert time.perf_counter() - started < 2.5
        runaway_result = results["runaway"]
        assert runaway_result.is_error and "longer than 3 s" in text_of(runaway_result)


async def test_nothing_but_json_rpc_on_stdout_and_env_secrets_stay_out_of_jq(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_OFFLOAD_TEST_SECRET": "hunter2"}  # a client passing env to the server
    async with Client(_params(tmp_path / "store", "--log-level", "DEBUG", env=env)) as client:
        h = result_of(await client.call_tool("offload", {"content": "[1,2]"}))["handle"]
        r = await client.call_tool("query_large_output", {"handle": h, "query": "$ENV, env | tostring", "raw": True})
        assert "hunter2" not in text_of(r) and "PATH" not in text_of(r)
        # DEBUG logging went to stderr; the client parsed every stdout line as JSON-RPC, or it would have failed


def test_bad_flags_fail_fast_with_a_message(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [_command(), "--encoding", "no_such_encoding", "--store", str(tmp_path / "s")],
        capture_output=True,
        text=True,
        timeout=HANG_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode != 0
    assert "no_such_encoding" in proc.stderr and "Traceback" not in proc.stderr
    assert proc.stdout == ""
