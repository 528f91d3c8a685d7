"""Lines that are not JSON-RPC messages get a JSON-RPC error over stdio (stdio_rejects.py), on a raw pipe to the
real `mcp-offload` process, with the request id when it can be recovered; the server keeps serving afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_offload.serve.stdio_rejects import request_id_of
from support.raw_pipe import RawPipe

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}


def _call(request_id: Any, arguments_json: str) -> str:
    return (
        f'{{"jsonrpc":"2.0","id":{json.dumps(request_id)},"method":"tools/call",'
        f'"params":{{"name":"offload","arguments":{{"content":{arguments_json}}}}}}}'
    )


BAD_LINES = [  # (line, expected code, expected id)
    (_call(1, '"abc\\ud800def"'), -32700, 1),  # an escaped lone surrogate
    ('{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[]}', -32600, 2),
    (_call("three", "9" * 5000), -32700, "three"),  # a 5,000-digit integer
    (_call(4, "[" * 100_000 + "]" * 100_000), -32700, 4),  # 100,000-deep nested arrays
    (
        '{"method":"tools/list","params":{},' + '"a":' + "[" * 100_000 + "]" * 100_000 + ',"id":5,"jsonrpc":"2.0"}',
        -32700,
        5,
    ),
    ("this is not json", -32700, None),
    ('{"jsonrpc":"2.0","method":"tools/list","params":[]}', -32600, None),  # no id to recover: null
]


@pytest.fixture(scope="module")
def pipe(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One server for the module's tests (each reads exactly its replies): it has to survive every bad line before
    the next test's, which is the point, and a server start costs ~2 s of CPU."""
    raw = RawPipe(tmp_path_factory.mktemp("rejects") / "store")
    raw.send(json.dumps(INIT))
    assert raw.receive()["id"] == 0
    raw.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
    yield raw
    raw.close()


@pytest.mark.parametrize(("line", "code", "request_id"), BAD_LINES, ids=[str(i) for i in range(len(BAD_LINES))])
def test_an_unparsable_request_gets_a_json_rpc_error(pipe: RawPipe, line: str, code: int, request_id: Any) -> None:
    pipe.send(line)
    reply = pipe.receive()
    assert reply["jsonrpc"] == "2.0" and reply["id"] == request_id and "result" not in reply
    assert reply["error"]["code"] == code and reply["error"]["message"]
    pipe.send('{"jsonrpc":"2.0","id":99,"method":"tools/list"}')  # still serving
    assert {t["name"] for t in pipe.receive()["result"]["tools"]} >= {"offload", "read_large_output"}


def test_the_messages_say_what_was_wrong(pipe: RawPipe) -> None:
    pipe.send(BAD_LINES[0][0])
    assert "lone surrogate" in pipe.receive()["error"]["message"]
    pipe.send(BAD_LINES[1][0])
    assert '"params" must be an object' in pipe.receive()["error"]["message"]


def test_a_malformed_response_from_the_client_is_not_answered(pipe: RawPipe) -> None:
    pipe.send('{"jsonrpc":"2.0","id":"s1","result":[]}')  # "result" must be an object: invalid, but a response
    pipe.send('{"jsonrpc":"2.0","id":98,"method":"tools/list"}')
    assert pipe.receive()["id"] == 98  # the first thing back is the next request's answer


@given(
    request_id=st.one_of(st.integers(-(2**53), 2**53), st.text(max_size=20)),
    before=st.dictionaries(
        st.sampled_from(["jsonrpc", "method", "params", "x"]),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=8),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
            max_leaves=10,
        ),
        max_size=3,
    ),
)
def test_the_id_is_recovered_wherever_it_sits(request_id: int | str, before: dict[str, Any]) -> None:
    body = json.dumps({**before, "id": request_id})
    assert request_id_of(body) == request_id
    deep = body[:-1] + ', "deep": ' + "[" * 50_000 + "]" * 50_000 + ', "big": ' + "7" * 5000 + "}"
    assert request_id_of(deep) == request_id  # json.loads refuses it: the scan finds the id
    assert request_id_of(body.replace('"id"', '"xid"')) is None
