"""The in-process retrieval API (`mcp_offload.core.outputs`): the same results as the tools, with no MCP in between."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from mcp_offload.core import outputs
from mcp_offload.core.services import Services, build_services
from mcp_offload.errors import InvalidHandle, OffloadError, QueryError, SearchError, UnknownHandle
from mcp_offload.mcp_server.offload_server import build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings
from support import text_of

DOC = json.dumps({"items": [{"id": i, "name": f"item-{i}", "ok": i % 2 == 0} for i in range(300)]}, indent=2)


async def test_offload_read_search_query_list_round_trip(services: Services) -> None:
    scope = outputs.SessionScope.new()
    stored = await outputs.offload(services, scope, DOC, name="items")
    assert stored.kind == "json" and stored.bytes == len(DOC) and stored.name == "items"
    assert ".items | length" in stored.preview

    whole = await outputs.read(services, scope, stored.handle, start=1, end=200)
    assert whole.text == DOC[:200] and whole.mode == "chars" and not whole.truncated

    lines = await outputs.read(services, scope, stored.handle, start_line=3, end_line=4)
    assert lines.text == "".join(DOC.splitlines(keepends=True)[2:4])

    hits = await outputs.search(services, scope, '"item-17"', handle=stored.handle, literal=True)
    assert [m.text.strip() for m in hits.matches] == ['"name": "item-17",']
    assert DOC[hits.matches[0].start - 1 : hits.matches[0].end] == '"item-17"'

    result = await outputs.query(services, scope, stored.handle, "[.items[] | select(.ok)] | length")
    assert result.result == "150" and result.results == 1

    listed = await outputs.list_outputs(services, scope)
    assert [o.handle for o in listed.outputs] == [stored.handle]


async def test_api_results_are_the_tools_meta_results(services: Services) -> None:
    """One implementation: the result a tool gives programs (`_meta`) is the API's model, field for field."""
    scope = outputs.SessionScope.named("same-session")
    async with Client(build_server(services, session="same-session")) as client:
        offloaded = await client.call_tool("offload", {"content": DOC, "name": "doc"})
        handle = result_of(offloaded)["handle"]
        read = await client.call_tool("read_large_output", {"handle": handle, "start_line": 2, "end_line": 3})
        found = await client.call_tool("search_large_output", {"pattern": "item-29[0-9]", "handle": handle})
        queried = await client.call_tool(
            "query_large_output", {"handle": handle, "query": ".items[3]", "compact": True}
        )
        listed = await client.call_tool("list_outputs", {})
    assert result_of(offloaded)["preview"] in text_of(offloaded)
    same_read = await outputs.read(services, scope, handle, start_line=2, end_line=3)
    assert result_of(read) == same_read.model_dump(mode="json")
    same_search = await outputs.search(services, scope, "item-29[0-9]", handle=handle)
    assert result_of(found) == same_search.model_dump(mode="json")
    same_query = await outputs.query(services, scope, handle, ".items[3]", compact=True)
    assert result_of(queried)["result"] == same_query.result == '{"id":3,"name":"item-3","ok":false}'
    assert result_of(listed) == (await outputs.list_outputs(services, scope)).model_dump(mode="json")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--session", ""], "--session: a session name is 1-200 printable characters"),
        (["--session", "a\tb"], "--session: a session name is 1-200 printable characters"),
        (["--session", "x", "--transport", "http"], "--session is for the stdio transport"),
    ],
)
def test_cli_refuses_bad_sessions_in_one_line(args: list[str], message: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_offload", "--store", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("mcp-offload: " + message)
    assert "Traceback" not in done.stderr


async def test_named_sessions_share_outputs_across_processes_on_one_store(settings: Settings) -> None:
    one, two = build_services(settings), build_services(settings)
    try:
        stored = await outputs.offload(one, outputs.SessionScope.named("agent-7"), "hello shared world\n" * 10)
        again = await outputs.read(two, outputs.SessionScope.named("agent-7"), stored.handle, start_line=1, end_line=1)
        assert again.text == "hello shared world\n"
        with pytest.raises(UnknownHandle):
            await outputs.read(two, outputs.SessionScope.named("agent-8"), stored.handle)
        with pytest.raises(UnknownHandle):
            await outputs.read(two, outputs.SessionScope.new(), stored.handle)
    finally:
        await one.aclose()
        await two.aclose()


@pytest.mark.parametrize("name", ["", "x" * 201, "tab\there", "nul\x00"])
def test_bad_session_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="session name"):
        outputs.SessionScope.named(name)


async def test_a_scope_without_identity_cannot_enumerate(services: Services) -> None:
    capability = outputs.SessionScope(outputs.SessionScope.new().key, enumerable=False)
    stored = await outputs.offload(services, capability, "needle in a haystack\n")
    with pytest.raises(OffloadError, match="cannot be listed"):
        await outputs.list_outputs(services, capability)
    with pytest.raises(SearchError, match="needs a handle"):
        await outputs.search(services, capability, "needle")
    hits = await outputs.search(services, capability, "needle", handle=stored.handle)
    assert hits.total_matches == 1
    assert await outputs.known_handles(services, capability) == "Check the handle you were given."


async def test_errors_are_offload_errors_and_store_nothing(services: Services) -> None:
    scope = outputs.SessionScope.new()
    with pytest.raises(InvalidHandle):
        await outputs.read(services, scope, "../../etc/passwd")
    with pytest.raises(OffloadError, match="empty"):
        await outputs.offload(services, scope, "")
    text = await outputs.offload(services, scope, "plain text, not JSON\n")
    with pytest.raises(QueryError):
        await outputs.query(services, scope, text.handle, ".")
    with pytest.raises(SearchError):
        await outputs.search(services, scope, "(a)\\1", handle=text.handle)
    assert [o.handle for o in (await outputs.list_outputs(services, scope)).outputs] == [text.handle]
    assert await outputs.known_handles(services, scope) == f"This session's outputs: {text.handle}."


async def test_blobs_are_stored_byte_exact(services: Services) -> None:
    scope = outputs.SessionScope.new()
    data = bytes(range(256)) * 4
    stored = await outputs.offload_bytes(services, scope, data, mime_type="image/png", name="chart")
    assert stored.kind == "blob" and stored.bytes == len(data) and stored.mime_type == "image/png"
    async with services.store.open(scope.key, stored.handle) as output:
        assert output.read_bytes(0, output.meta.size) == data


async def test_searching_a_binary_output_by_handle_is_refused_not_answered_no_match(services: Services) -> None:
    scope = outputs.SessionScope.new()
    blob = await outputs.offload_bytes(services, scope, b"\x89PNG\r\n\x1a\n" + bytes(64), mime_type="image/png")
    with pytest.raises(SearchError, match="binary"):
        await outputs.search(services, scope, "PNG", handle=blob.handle)
    text = await outputs.offload(services, scope, "a line with PNG in it")
    everywhere = await outputs.search(services, scope, "PNG")  # the session-wide search skips the binary one
    assert [m.handle for m in everywhere.matches] == [text.handle]
