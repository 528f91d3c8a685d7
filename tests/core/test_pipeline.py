"""The core tool pipeline: one tool call answered in plain values (text, is_error, the result record), the one place
a model-facing error becomes an answer; the MCP server, the Compactor and the gateway give the model the same text."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from typing import Any

import pytest
from mcp import Client

from mcp_offload.cachesafe.retrieval import run_retrieval
from mcp_offload.cachesafe.session import CacheSafeSession
from mcp_offload.compact import AsyncCompactor
from mcp_offload.core import outputs
from mcp_offload.core.pipeline import OTHER_PROCESS_HINT, ToolAnswer, answer_error, run_tool
from mcp_offload.core.services import Services
from mcp_offload.core.tools import TOOLS_BY_NAME, CallContext, ToolReply
from mcp_offload.errors import ExpiredHandle, StoreUnavailable, UnknownHandle
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import RESULT_META, result_to_mcp
from support import text_of

DOC = json.dumps({"items": [{"id": i, "name": f"item-{i}"} for i in range(200)]}, indent=2)
UNKNOWN = "out_" + "a" * 26


async def test_a_call_answers_text_and_the_result_record(services: Services) -> None:
    context = CallContext(services, outputs.SessionScope.named("pipeline"))
    stored = await run_tool(TOOLS_BY_NAME["offload"], context, {"content": DOC, "name": "items"})
    assert not stored.is_error and stored.result is not None
    handle = stored.result["handle"]
    assert handle in stored.text and stored.result["kind"] == "json"
    read = await run_tool(TOOLS_BY_NAME["read_large_output"], context, {"handle": handle, "start": 1, "end": 40})
    assert read == ToolAnswer(read.text, False, read.result)
    assert read.result is not None and read.result["text"] == DOC[:40] and DOC[:40] in read.text


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("read_large_output", {}, "Invalid arguments for read_large_output: handle: Field required"),
        ("read_large_output", {"handle": UNKNOWN, "bogus": 1}, "bogus: unknown parameter (this tool takes: handle,"),
        ("read_large_output", {"handle": "nope"}, "not a valid handle"),
        ("search_large_output", {"pattern": "(", "handle": UNKNOWN}, ""),
        ("query_large_output", {"handle": UNKNOWN, "query": "."}, "This session has no stored outputs yet."),
    ],
)
async def test_bad_input_is_an_error_answer_never_an_exception(
    services: Services, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    answer = await run_tool(TOOLS_BY_NAME[tool], CallContext(services, outputs.SessionScope.new()), arguments)
    assert answer.is_error and answer.result is None
    assert expected in answer.text


async def test_the_one_translation_of_model_errors(services: Services) -> None:
    scope = outputs.SessionScope.named("translation")
    await outputs.offload(services, scope, DOC, name="items")
    private = CallContext(services, scope, private_session=True)
    unknown = await answer_error(UnknownHandle(f"no output {UNKNOWN} in this session"), private)
    assert unknown.is_error and "This session's outputs: out_" in unknown.text and "(items)" in unknown.text
    assert unknown.text.endswith(OTHER_PROCESS_HINT)
    plain = await answer_error(StoreUnavailable("the store is down"), CallContext(services, scope))
    assert plain == ToolAnswer("the store is down", is_error=True)
    expired = await answer_error(ExpiredHandle("it expired"), private)
    assert expired.text == "it expired"  # only an unknown handle gets the session's handles


async def test_an_unexpected_failure_is_a_generic_answer(services: Services, caplog: pytest.LogCaptureFixture) -> None:
    async def broken(context: CallContext, args: Any) -> ToolReply:
        raise RuntimeError("secret detail /etc/passwd")

    spec = TOOLS_BY_NAME["list_outputs"]
    answer = await run_tool(replace(spec, handler=broken), CallContext(services, outputs.SessionScope.new()), {})
    assert answer == ToolAnswer(
        "list_outputs failed unexpectedly on the server; nothing was changed. Try again.", is_error=True
    )
    assert "secret" not in answer.text and any("list_outputs failed" in r.message for r in caplog.records)


async def test_every_front_end_gives_the_model_the_same_text(tmp_path: Any) -> None:
    """The MCP server converts the answer, the Compactor and the gateway take its text: byte for byte the same."""
    compactor = AsyncCompactor(str(tmp_path / "store"), "same", jq_workers=1)
    services = compactor.services
    scope = compactor.scope
    session = CacheSafeSession(scope=scope, key=scope.key)
    stored = await outputs.offload(services, scope, DOC, name="items")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_large_output", {"pattern": "item-1[0-9]", "handle": stored.handle}),
        ("query_large_output", {"handle": stored.handle, "query": ".items | length"}),
        ("read_large_output", {"handle": UNKNOWN}),
        ("read_large_output", {"handle": stored.handle, "start_line": 0}),
    ]
    try:
        async with Client(build_server(services, session="same")) as client:
            for name, arguments in calls:
                core = await run_tool(TOOLS_BY_NAME[name], CallContext(services, scope), arguments)
                mcp_result = await client.call_tool(name, arguments)
                mcp_meta = (mcp_result.meta or {}).get(RESULT_META)
                assert text_of(mcp_result) == core.text and bool(mcp_result.is_error) == core.is_error
                timeless = [{k: v for k, v in (r or {}).items() if k != "elapsed_ms"} for r in (mcp_meta, core.result)]
                assert timeless[0] == timeless[1] and (mcp_meta is None) == (core.result is None)
                converted = result_to_mcp(core)
                assert (converted.content, converted.is_error) == (mcp_result.content, mcp_result.is_error)
                assert await compactor.run_tool(name, arguments) == core.text
                assert (await run_retrieval(services, session, name, arguments)).text.startswith(core.text)
    finally:
        await compactor.aclose()


def test_the_pipeline_loads_no_mcp() -> None:
    code = (
        "import sys\n"
        "import mcp_offload.core.pipeline, mcp_offload.compact, mcp_offload.cachesafe.retrieval\n"
        "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert proc.stdout.strip() == "[]"
