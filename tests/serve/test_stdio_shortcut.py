"""The stdio front's shortcut (serve/stdio_shortcut.py): a proxied `tools/call` answered from its line.

Every test runs the real `mcp-offload --config` as a stdio subprocess in front of a real upstream (the fixture server
of tests/support/proxy.py, or server-everything from npm), driven by the real SDK client or, where the exact bytes
and the order of lines matter, by a raw pipe. `proxy_status` counts the calls the shortcut answered
(`shortcut_calls`), so a test fails when the shortcut is bypassed, and also when it takes what it must not.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
import pytest_asyncio
from mcp import Client, MCPError, StdioServerParameters

import mcp_offload
from mcp_offload.mcp_server.tools import result_of
from support import ERAS, text_of
from support.held import held
from support.proxy import fixture_entry, npm_entry
from support.raw_pipe import RawPipe

SOURCES = str(Path(mcp_offload.__file__).resolve().parents[1])
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1.0"},
}


def _config(tmp_path: Path, **entries: dict[str, Any]) -> Path:
    path = tmp_path / "servers.json"
    path.write_text(json.dumps({"mcpServers": entries or {"fx": fixture_entry()}}))
    return path


def _params(tmp_path: Path, config: Path) -> StdioServerParameters:
    script = Path(sys.executable).with_name("mcp-offload")
    args = ["--store", str(tmp_path / "store"), "--config", str(config)]
    return StdioServerParameters(command=str(script), args=args, env={"PYTHONPATH": SOURCES})  # this tree's code


async def _shortcut_calls(client: Client) -> int:
    count = result_of(await client.call_tool("proxy_status", {}))["shortcut_calls"]
    assert isinstance(count, int)
    return count


# -- the SDK client over a real stdio subprocess, both eras ------------------------------------------------------
# One proxy per era serves the four tests below in turn (each counts the shortcut's calls from where it starts): a
# proxy and its upstream cost a few seconds of CPU to start.
@pytest_asyncio.fixture(scope="module", loop_scope="module", params=ERAS)
async def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    tmp_path = tmp_path_factory.mktemp(f"shortcut-{request.param}")
    async with held(
        Client(_params(tmp_path, _config(tmp_path)), mode=request.param, read_timeout_seconds=60)
    ) as held_client:
        yield held_client


@pytest.mark.asyncio(loop_scope="module")
async def test_small_result_is_answered_by_the_shortcut_as_the_upstream_sent_it(client: Client) -> None:
    assert "fx__echo" in {t.name for t in (await client.list_tools()).tools}
    before = await _shortcut_calls(client)
    results = [await client.call_tool("fx__echo", {"name": f"héllo {i} ✓"}) for i in range(5)]
    assert await _shortcut_calls(client) == before + 5  # all five answered from their line
    assert [text_of(r) for r in results] == [f"héllo {i} ✓" for i in range(5)]
    assert all(not r.is_error and r.structured_content is None for r in results)


@pytest.mark.asyncio(loop_scope="module")
async def test_big_result_is_offloaded_and_read_back_in_the_same_session(client: Client) -> None:
    await client.list_tools()
    before = await _shortcut_calls(client)
    big = await client.call_tool("fx__json", {"n": 20_000})
    assert await _shortcut_calls(client) == before + 1
    links = [b for b in big.content if isinstance(b, types.ResourceLink)]
    assert "Stored as out_" in text_of(big) and len(text_of(big)) < 6_000 and links
    handle = str(links[0].uri).removeprefix("offload://outputs/")
    # the output is in the session the full path serves: our own tools find it
    found = await client.call_tool("query_large_output", {"handle": handle, "query": ".items | length"})
    assert text_of(found).strip().startswith("20000"), text_of(found)[:300]


@pytest.mark.asyncio(loop_scope="module")
async def test_upstream_error_is_passed_on_as_the_same_error(client: Client) -> None:
    await client.list_tools()
    before = await _shortcut_calls(client)
    with pytest.raises(MCPError) as caught:
        await client.call_tool("fx__fail", {"n": 1})
    assert caught.value.code == types.INVALID_PARAMS and caught.value.message == "n is out of range"
    assert caught.value.error.data == {"max": 0}
    failed = await client.call_tool("fx__fail", {"n": 2})  # an isError result is never offloaded
    assert failed.is_error and text_of(failed) == "E" * 50_000
    assert await _shortcut_calls(client) == before + 2


@pytest.mark.asyncio(loop_scope="module")
async def test_cancelled_call_reaches_the_upstream_and_the_proxy_goes_on(client: Client, tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    await client.list_tools()
    before = await _shortcut_calls(client)
    with anyio.move_on_after(2) as waited:  # the SDK client sends notifications/cancelled when its caller stops
        await client.call_tool("fx__hang", {"n": 60, "name": str(marker)})
    assert waited.cancelled_caught
    for _ in range(300):
        if marker.exists():
            break
        await anyio.sleep(0.1)
    assert marker.read_text() == "cancelled"  # the upstream was told to stop
    assert text_of(await client.call_tool("fx__echo", {"name": "after"})) == "after"
    assert await _shortcut_calls(client) == before + 2


@pytest.mark.parametrize("mode", ERAS)
async def test_progress_is_relayed_under_the_clients_token(tmp_path: Path, mode: str) -> None:
    config = _config(tmp_path, every=npm_entry("server-everything", "stdio"))
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(_params(tmp_path, config), mode=mode, read_timeout_seconds=60) as client:
        await client.list_tools()
        before = await _shortcut_calls(client)
        done = await client.call_tool(
            "every__trigger-long-running-operation", {"duration": 0.4, "steps": 4}, progress_callback=on_progress
        )
        assert await _shortcut_calls(client) == before + 1
    assert "completed" in text_of(done) and seen == [1, 2, 3, 4]


# -- a raw pipe: the exact lines ---------------------------------------------------------------------------------
@pytest.fixture
def pipe(tmp_path: Path) -> Iterator[RawPipe]:
    raw = RawPipe(tmp_path / "store", "--config", str(_config(tmp_path)))
    try:
        yield raw
    finally:
        raw.close()


def _request(request_id: int | str, method: str, params: dict[str, Any], *, modern: bool) -> str:
    if modern:
        params = {**params, "_meta": {**params.get("_meta", {}), **MODERN_META}}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}, ensure_ascii=False)


def _answer_line(pipe: RawPipe) -> bytes:
    """The next answer's line, past notifications (the proxy's list_changed when an upstream comes up)."""
    while True:
        line = pipe.receive_line()
        if "id" in json.loads(line):
            return line


def _answer(pipe: RawPipe) -> dict[str, Any]:
    answer: dict[str, Any] = json.loads(_answer_line(pipe))
    return answer


def _initialize(pipe: RawPipe, request_id: int | str) -> None:
    """The handshake (again: a new `initialize` also makes the shortcut forget what it learned)."""
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "1"}}
    pipe.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}))
    assert _answer(pipe)["id"] == request_id
    pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def _list(pipe: RawPipe, modern: bool = False) -> None:
    """tools/list (the full path: it waits for the upstream to be up, and teaches the shortcut the era)."""
    pipe.send(_request("list", "tools/list", {}, modern=modern))
    assert "fx__echo" in {tool["name"] for tool in _answer(pipe)["result"]["tools"]}


def _counted(pipe: RawPipe, modern: bool) -> int:
    pipe.send(_request("status", "tools/call", {"name": "proxy_status", "arguments": {}}, modern=modern))
    answer = _answer(pipe)
    assert answer["id"] == "status", answer
    count = answer["result"]["_meta"]["mcp-offload/result"]["shortcut_calls"]
    assert isinstance(count, int)
    return count


CASES: list[dict[str, Any]] = [
    {"name": "fx__echo", "arguments": {"name": 'ünïcödé ✓ \u2028 "quoted"'}},
    {"name": "fx__echo", "arguments": {"name": "with a token"}, "_meta": {"progressToken": "tok-1"}},
    {"name": "fx__fail", "arguments": {"n": 1}},  # the upstream's JSON-RPC error
    {"name": "fx__fail", "arguments": {"n": 2}},  # a large isError result, passed on untouched
    {"name": "fx__json", "arguments": {"n": 3}},
]


@pytest.mark.parametrize("modern", [False, True], ids=["2025-11-25", "2026-07-28"])
def test_shortcut_lines_equal_the_full_paths_byte_for_byte(pipe: RawPipe, modern: bool) -> None:
    if not modern:
        _initialize(pipe, "init-0")
    for i, params in enumerate(CASES):
        if i:  # forget the era: the next call takes the full path, which teaches it again
            if modern:
                pipe.send(json.dumps({"jsonrpc": "2.0", "id": f"init-{i}", "method": "initialize", "params": {}}))
                assert _answer(pipe)["id"] == f"init-{i}"  # refused on a 2026-07-28 connection, as the SDK does
            else:
                _initialize(pipe, f"init-{i}")
        pipe.send(_request(i, "tools/call", params, modern=modern))
        full = _answer_line(pipe)
        assert _counted(pipe, modern) == i, params  # the first one was the full path's (one answered per case)
        pipe.send(_request(i, "tools/call", params, modern=modern))
        short = _answer_line(pipe)
        assert _counted(pipe, modern) == i + 1, params  # the second one was the shortcut's
        assert short == full, (params, full[:300], short[:300])
        assert json.loads(full)["id"] == i


def test_cancelled_call_is_never_answered(pipe: RawPipe) -> None:
    _initialize(pipe, 0)
    _list(pipe)
    before = _counted(pipe, modern=False)
    pipe.send(_request("h", "tools/call", {"name": "fx__hang", "arguments": {"n": 60}}, modern=False))
    pipe.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "h"}}))
    pipe.send(_request("e", "tools/call", {"name": "fx__echo", "arguments": {"name": "next"}}, modern=False))
    echoed = _answer(pipe)
    assert echoed["id"] == "e" and echoed["result"]["content"][0]["text"] == "next"
    time.sleep(0.5)
    assert _counted(pipe, modern=False) == before + 2  # the next line is the status: "h" got no answer


def test_malformed_lines_take_the_full_path_and_get_its_errors(pipe: RawPipe) -> None:
    _initialize(pipe, 0)
    _list(pipe)
    before = _counted(pipe, modern=False)
    pipe.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": []}')
    assert _answer(pipe) == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": ANY_MESSAGE}}
    pipe.send('{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "fx__echo", "arguments": "x"}}')
    answer = _answer(pipe)
    assert answer["id"] == 8 and answer["error"]["code"] == types.INVALID_PARAMS
    pipe.send('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "fx__echo"')
    answer = _answer(pipe)
    assert answer["id"] == 9 and answer["error"]["code"] == types.PARSE_ERROR
    pipe.send('{"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {"name": "fx__nope"}}')
    answer = _answer(pipe)
    assert answer["id"] == 10 and answer["result"]["isError"] is True  # unknown tool: the full path's answer
    assert _counted(pipe, modern=False) == before  # none of them was the shortcut's


def test_envelopes_the_sdk_refuses_take_the_full_path(pipe: RawPipe) -> None:
    _list(pipe, modern=True)
    echo = {"name": "fx__echo", "arguments": {"name": "x"}}
    unsupported = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    pipe.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {**echo, "_meta": unsupported}}))
    assert _answer(pipe)["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
    partial = {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}  # no clientCapabilities
    pipe.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {**echo, "_meta": partial}}))
    assert _answer(pipe)["error"]["code"] == types.INVALID_PARAMS
    pipe.send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": echo}))  # no envelope at all
    assert _answer(pipe)["error"]["code"] == types.INVALID_PARAMS
    assert _counted(pipe, modern=True) == 0
    pipe.send(_request(4, "tools/call", echo, modern=True))
    assert _answer(pipe)["result"]["content"][0]["text"] == "x"
    assert _counted(pipe, modern=True) == 1


def test_a_call_before_initialize_is_refused_by_the_full_path(pipe: RawPipe) -> None:
    pipe.send(_request(1, "tools/call", {"name": "fx__echo", "arguments": {"name": "early"}}, modern=False))
    early = _answer(pipe)
    assert early["id"] == 1 and early["error"]["code"] == types.INVALID_PARAMS
    _initialize(pipe, 2)
    _list(pipe)
    pipe.send(_request(3, "tools/call", {"name": "fx__echo", "arguments": {"name": "now"}}, modern=False))
    assert _answer(pipe)["result"]["content"][0]["text"] == "now"
    assert _counted(pipe, modern=False) == 1  # answered by the shortcut, once tools/list taught it the era


class _AnyMessage(str):
    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and bool(other)

    __hash__ = str.__hash__


ANY_MESSAGE = _AnyMessage()
