"""The raw channel: a stdio upstream's `tools/call` goes out as one JSON line beside the SDK client's own traffic on
the same pipes (`proxy/transports/raw_channel.py`, `stdio_pipes.py`). Its own cases, against a scripted upstream (a
real child process on real pipes, answering by a script, logging every line it reads): our ids never meet the SDK's,
a stray answer or progress for an id nobody waits for is dropped, the upstream's exit fails every waiting call at
once, progress reaches the caller, a timeout or a caller's cancel tells the upstream (`notifications/cancelled`), and
on a 2026-07-28 connection each request carries the SDK client's envelope; the pipes work on the CLI's uvloop too, and
a flood of control traffic reaches a slow SDK client whole and in order while the child's stdout pauses. The same
behaviours through the whole proxy with real upstream servers are in test_upstream.py, test_router.py and
test_real.py."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import orjson
import pytest
from mcp import MCPError, StdioServerParameters
from mcp.shared.message import SessionMessage

from mcp_offload.cli.event_loop import loop_options
from mcp_offload.proxy.config import parse_config
from mcp_offload.proxy.transports import UpstreamUnavailable
from mcp_offload.proxy.transports.raw_channel import ChannelClosed, RawChannel, encode_line
from mcp_offload.proxy.transports.stdio_pipes import SDK_BACKLOG, _Child, parse_line, stdio_pipes
from mcp_offload.proxy.upstream import Upstream
from support import HANG_TIMEOUT_S

# The scripted upstream: the 2025-11-25 handshake (server/discover is refused, so the SDK client falls back), then
# answers by tool name. Every line it reads is appended to the log file (argv[1]).
SCRIPT = r"""
import json, os, sys

log = open(sys.argv[1], "a")

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

def answer(rid, text):
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})

def progress(token, value, **extra):
    send({"jsonrpc": "2.0", "method": "notifications/progress",
          "params": {"progressToken": token, "progress": value, **extra}})

tools = [{"name": n, "inputSchema": {"type": "object"}}
         for n in ("echo", "stray", "progress", "hold", "die", "fail", "flood")]
for line in sys.stdin:
    log.write(line)
    log.flush()
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {}, "resources": {}},
            "serverInfo": {"name": "scripted", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "resources/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"resources": []}})
    elif method == "resources/templates/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"resourceTemplates": []}})
    elif method == "resources/read":
        uri = m["params"]["uri"]
        send({"jsonrpc": "2.0", "id": rid, "result": {"contents": [{"uri": uri, "text": json.dumps(rid)}]}})
    elif method == "tools/call":
        name = m["params"]["name"]
        token = (m["params"].get("_meta") or {}).get("progressToken")
        if name == "echo":
            answer(rid, json.dumps(rid))
        elif name == "stray":  # answers and progress for ids nobody waits for, then the real answer
            send({"jsonrpc": "2.0", "id": "mo-999999", "result": {"content": []}})
            send({"jsonrpc": "2.0", "id": 987654, "result": {}})
            send({"jsonrpc": "2.0", "id": "mo-999998", "error": {"code": -32603, "message": "stray"}})
            progress("mo-999999", 1)
            answer(rid, "the real answer")
        elif name == "progress":
            progress(token, 1, total=3, message="step 1")
            progress(token, "not a number")
            progress(token, 2, total=3)
            progress(token, 3)
            answer(rid, "done")
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "bad n", "data": {"max": 0}}})
        elif name == "die":
            os._exit(3)
        elif name == "flood":  # n log notifications (control traffic, for the SDK client) of ~1 KB, then the answer
            for i in range(m["params"]["arguments"]["n"]):
                send({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": {"i": i, "pad": "x" * 1000}}})
            answer(rid, "flooded")
        # hold: never answers
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
"""


@asynccontextmanager
async def scripted(tmp_path: Path, *, call_timeout_s: float = HANG_TIMEOUT_S) -> AsyncIterator[tuple[Upstream, Path]]:
    """The scripted upstream under a running `Upstream` supervisor (the proxy's own), ready; and its log."""
    script, log = tmp_path / "scripted.py", tmp_path / "received.jsonl"
    script.write_text(SCRIPT)
    log.touch()
    config = parse_config({"mcpServers": {"s": {"command": sys.executable, "args": [str(script), str(log)]}}})
    upstream = Upstream(config.upstreams[0], call_timeout_s=call_timeout_s, startup_timeout_s=HANG_TIMEOUT_S)
    async with anyio.create_task_group() as tg:
        tg.start_soon(upstream.run)
        with anyio.fail_after(HANG_TIMEOUT_S):
            await upstream.call_tool("echo", {})  # waits for the connection
        assert upstream.protocol_version == "2025-11-25"
        yield upstream, log
        tg.cancel_scope.cancel()


def received(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


async def wait_for(log: Path, match: Any) -> dict[str, Any]:
    """The first message in the log that `match` accepts, waiting for it to be written."""
    with anyio.fail_after(HANG_TIMEOUT_S):
        while True:
            for message in received(log):
                if match(message):
                    return message
            await anyio.sleep(0.02)


def is_hold(message: dict[str, Any]) -> bool:
    return bool(message.get("method") == "tools/call" and message["params"]["name"] == "hold")


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_raw_calls_and_sdk_requests_share_the_pipes_without_id_clashes(tmp_path: Path) -> None:
    async with scripted(tmp_path) as (upstream, log):
        calls: dict[int, str] = {}
        reads: dict[int, str] = {}

        async def call(i: int) -> None:
            calls[i] = text(await upstream.call_tool("echo", {"i": i}))

        async def read(i: int) -> None:
            result = await upstream.read_resource(f"scripted://r/{i}")
            reads[i] = str(getattr(result.contents[0], "text", ""))

        with anyio.fail_after(HANG_TIMEOUT_S):
            async with anyio.create_task_group() as tg:
                for i in range(20):
                    tg.start_soon(call, i)
                    tg.start_soon(read, i)
        raw_ids = [json.loads(v) for v in calls.values()]
        sdk_ids = [json.loads(v) for v in reads.values()]
        assert all(type(r) is str and r.startswith("mo-") for r in raw_ids)  # each answer came to its own caller
        assert all(type(r) is int for r in sdk_ids)
        assert len(set(raw_ids)) == 20 and len(set(sdk_ids)) == 20
        by_id = {m["id"]: m for m in received(log) if "id" in m}
        for i, value in calls.items():  # the answer each caller got is the one for the request it sent
            assert by_id[json.loads(value)]["params"]["arguments"] == {"i": i}
        for i, value in reads.items():
            assert by_id[json.loads(value)]["params"]["uri"] == f"scripted://r/{i}"
        assert all(m["method"] != "tools/call" for m in received(log) if type(m.get("id")) is int)


async def test_answers_and_progress_for_unknown_ids_are_dropped(tmp_path: Path) -> None:
    async with scripted(tmp_path) as (upstream, _log):
        with anyio.fail_after(HANG_TIMEOUT_S):
            assert text(await upstream.call_tool("stray", {})) == "the real answer"
            # the connection is intact for both kinds of traffic
            assert text(await upstream.call_tool("echo", {})).startswith('"mo-')
            read = await upstream.read_resource("scripted://after")
            assert json.loads(str(getattr(read.contents[0], "text", ""))) > 0
            assert upstream.state == "ready" and upstream.restarts == 0


async def test_progress_reaches_the_caller_and_a_bad_note_is_dropped(tmp_path: Path) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with scripted(tmp_path) as (upstream, log):
        with anyio.fail_after(HANG_TIMEOUT_S):
            assert text(await upstream.call_tool("progress", {}, progress=on_progress)) == "done"
        assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, None), (3.0, None, None)]
        request = await wait_for(log, lambda m: m.get("params", {}).get("name") == "progress")
        assert request["params"]["_meta"] == {"progressToken": request["id"]}  # its own id: answers come back here
        echo = await wait_for(log, lambda m: m.get("params", {}).get("arguments") == {})
        assert "_meta" not in echo["params"]  # no callback: no token asked for


async def test_upstream_exit_fails_every_waiting_call_at_once(tmp_path: Path) -> None:
    async with scripted(tmp_path) as (upstream, log):
        errors: list[str] = []

        async def hold() -> None:
            with pytest.raises(UpstreamUnavailable) as excinfo:
                await upstream.call_tool("hold", {})
            errors.append(str(excinfo.value))

        started = time.monotonic()
        with anyio.fail_after(HANG_TIMEOUT_S):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(hold)
                await wait_for(log, lambda m: len([x for x in received(log) if is_hold(x)]) >= 3)
                with pytest.raises(UpstreamUnavailable) as died:
                    await upstream.call_tool("die", {})
        assert time.monotonic() - started < HANG_TIMEOUT_S / 2  # the exit ended them, not a timeout
        want = (
            "MCP server 's' closed the connection during the call to 'hold' (it may have crashed); the call may or "
            "may not have taken effect. It will be restarted on the next call."
        )
        assert errors == [want] * 3
        assert str(died.value) == want.replace("'hold'", "'die'")
        with anyio.fail_after(HANG_TIMEOUT_S):  # the next call restarts it
            assert text(await upstream.call_tool("echo", {})).startswith('"mo-')
        assert upstream.restarts == 1


async def test_a_timeout_and_a_cancel_tell_the_upstream(tmp_path: Path) -> None:
    async with scripted(tmp_path, call_timeout_s=0.5) as (upstream, log):
        with pytest.raises(UpstreamUnavailable, match=r"did not answer the call to 'hold' within 0\.5 s"):
            await upstream.call_tool("hold", {"n": 1})
        held = await wait_for(log, lambda m: m.get("params", {}).get("arguments") == {"n": 1})
        cancel = await wait_for(log, lambda m: m.get("method") == "notifications/cancelled")
        assert cancel["params"] == {"requestId": held["id"], "reason": "timed out"}

        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: upstream.call_tool("hold", {"n": 2}, timeout_s=60.0))
                second = await wait_for(log, lambda m: m.get("params", {}).get("arguments") == {"n": 2})
                scope.cancel()
        assert scope.cancelled_caught
        cancels = [m for m in received(log) if m.get("method") == "notifications/cancelled"]
        await wait_for(log, lambda m: m.get("params", {}).get("requestId") == second["id"])
        cancels = [m for m in received(log) if m.get("method") == "notifications/cancelled"]
        assert cancels[1]["params"] == {"requestId": second["id"], "reason": "the caller cancelled"}
        assert upstream.state == "ready"


def test_the_pipes_run_on_the_loop_the_cli_runs(tmp_path: Path) -> None:
    """The servers run on uvloop (cli/event_loop.py), whose pipe transports are no asyncio subclasses: calls, SDK
    traffic, progress and the upstream's exit there too (the tests above run on the standard loop)."""
    assert loop_options() == {"use_uvloop": True}  # uvloop is a dependency here (Linux)
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async def scenario() -> None:
        async with scripted(tmp_path) as (upstream, _log):
            with anyio.fail_after(HANG_TIMEOUT_S):
                assert text(await upstream.call_tool("echo", {})).startswith('"mo-')
                read = await upstream.read_resource("scripted://uvloop")
                assert type(json.loads(str(getattr(read.contents[0], "text", "")))) is int  # the SDK's own id
                assert text(await upstream.call_tool("progress", {}, progress=on_progress)) == "done"
                with pytest.raises(UpstreamUnavailable, match="closed the connection during the call to 'die'"):
                    await upstream.call_tool("die", {})
                assert text(await upstream.call_tool("echo", {})).startswith('"mo-')  # restarted
            assert upstream.restarts == 1

    anyio.run(scenario, backend="asyncio", backend_options=loop_options())
    assert seen == [1.0, 2.0, 3.0]


async def test_a_flood_of_control_traffic_reaches_a_slow_sdk_client_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines for the SDK client wait in a bounded queue: past SDK_BACKLOG the child's stdout is no longer read (it
    blocks on a full pipe), and nothing is lost or reordered; the call's answer after them still comes."""
    pauses: list[bool] = []
    pause = _Child.pause_reading

    def recorded(self: _Child, paused: bool) -> None:
        pauses.append(paused)
        pause(self, paused)

    monkeypatch.setattr(_Child, "pause_reading", recorded)
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPT)
    params = StdioServerParameters(command=sys.executable, args=[str(script), str(tmp_path / "received.jsonl")])
    count = SDK_BACKLOG * 40  # ~2.6 MB: far more than the pipe and the queue hold
    with (tmp_path / "stderr.txt").open("w") as errlog, anyio.fail_after(HANG_TIMEOUT_S):
        async with stdio_pipes(params, errlog) as ((read_stream, _write_stream), raw):
            async with anyio.create_task_group() as tg:
                answers: list[dict[str, Any]] = []

                async def call() -> None:
                    params = {"name": "flood", "arguments": {"n": count}}
                    answers.append(await raw.request("tools/call", params, timeout_s=HANG_TIMEOUT_S, modern=False))

                tg.start_soon(call)
                got: list[int] = []
                while len(got) < count:
                    item = await read_stream.receive()
                    assert isinstance(item, SessionMessage), item
                    assert isinstance(item.message, types.JSONRPCNotification) and item.message.params is not None
                    got.append(item.message.params["data"]["i"])
                    if len(got) % SDK_BACKLOG == 0:
                        await anyio.sleep(0.01)  # a slow reader: the queue fills and reading pauses
            assert got == list(range(count))
            assert answers[0]["result"]["content"][0]["text"] == "flooded"
    assert pauses[:2] == [True, False] and len(pauses) > 10  # reading paused and resumed, again and again


async def test_a_json_rpc_error_is_passed_through(tmp_path: Path) -> None:
    async with scripted(tmp_path) as (upstream, _log):
        with pytest.raises(MCPError) as excinfo:
            await upstream.call_tool("fail", {})
        error = excinfo.value.error
        assert (error.code, error.message, error.data) == (types.INVALID_PARAMS, "bad n", {"max": 0})


async def test_the_envelope_and_ids_on_the_wire() -> None:
    """The lines the channel writes: string ids of its own, the SDK client's 2026-07-28 envelope on a modern
    connection (and none on a handshake one), the answer handed to its caller, a closed channel failing at once."""
    lines: list[dict[str, Any]] = []
    channel: RawChannel

    async def write(line: bytes) -> None:
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        message = orjson.loads(line)
        lines.append(message)
        if "id" in message:  # answered at once, as the connection's reader would hand it over
            assert channel.take({"jsonrpc": "2.0", "id": message["id"], "result": {"content": []}})

    channel = RawChannel(write)
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-offload", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    channel.note_sent({"method": "tools/list", "params": {"_meta": {**envelope, "progressToken": 7}}})
    with anyio.fail_after(HANG_TIMEOUT_S):
        answer = await channel.request("tools/call", {"name": "a"}, timeout_s=30, modern=True)
        await channel.request("tools/call", {"name": "b"}, timeout_s=30, modern=False)
    assert answer == {"jsonrpc": "2.0", "id": "mo-1", "result": {"content": []}}
    assert lines == [
        {"jsonrpc": "2.0", "id": "mo-1", "method": "tools/call", "params": {"name": "a", "_meta": envelope}},
        {"jsonrpc": "2.0", "id": "mo-2", "method": "tools/call", "params": {"name": "b"}},
    ]
    assert channel.take({"jsonrpc": "2.0", "id": "mo-77", "result": {}})  # ours, nobody waits: taken and dropped
    assert not channel.take({"jsonrpc": "2.0", "id": 3, "result": {}})  # the SDK's ids are the SDK's
    assert not channel.take({"jsonrpc": "2.0", "id": "other-1", "result": {}})
    assert not channel.take({"jsonrpc": "2.0", "id": "mo-9", "method": "sampling/createMessage", "params": {}})
    channel.close()
    with pytest.raises(ChannelClosed):
        await channel.request("tools/call", {"name": "c"}, timeout_s=30, modern=False)


def test_lines_the_fast_codecs_refuse_are_still_read_and_written() -> None:
    assert parse_line(b'{"id": 1, "n": 123456789012345678901234567890}')["n"] == 123456789012345678901234567890
    assert parse_line(b'{"text": "\\ud800"}')["text"] == "\ud800"  # a lone surrogate
    assert parse_line(b'{"text": "caf\xe9"}')["text"] == "caf\ufffd"  # not UTF-8: replaced, not dropped
    with pytest.raises(ValueError):
        parse_line(b"Starting server on stdio...")
    with pytest.raises(ValueError, match="nested too deeply"):  # never a RecursionError out of the loop's callback
        parse_line(b"[" * 100_000 + b"]" * 100_000)
    big = {"jsonrpc": "2.0", "id": "mo-1", "params": {"arguments": {"n": 2**70, "s": "é"}}}
    line = b'{"jsonrpc":"2.0","id":"mo-1","params":{"arguments":{"n":1180591620717411303424,"s":"\xc3\xa9"}}}\n'
    assert encode_line(big) == line
    assert parse_line(encode_line(big)[:-1]) == big
