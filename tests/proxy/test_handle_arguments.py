"""Stored outputs as arguments (`offload://outputs/<handle>`): substituted exactly, only in the caller's session,
refused clearly (nothing sent) otherwise. Against the store directly, then through the proxy to real upstream
servers (server-filesystem, server-memory) in both client eras."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_offload.core.ingest import ingest_blob, ingest_text
from mcp_offload.core.services import Services
from mcp_offload.errors import InvalidHandle, OffloadError, UnknownHandle
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.proxy.handle_arguments import ArgumentNotSubstituted, substitute_outputs
from mcp_offload.proxy.router import STATUS_TOOL_DEF
from mcp_offload.store.handles import scope_key
from mcp_offload.tokens import load_counter
from support import ERAS, text_of
from support.anthropic_recorder import Exchange, run_claude_code
from support.proxy import npm_entry, running_proxy

SCOPE, OTHER = scope_key("session a"), scope_key("session b")
SCHEMA = {
    "type": "object",
    "properties": {
        "content": {"type": "string"},
        "short": {"type": "string", "maxLength": 10},
        "entities": {"type": "array", "items": {"$ref": "#/$defs/Entity"}},
        "options": {"type": "object", "properties": {"body": {"type": ["string", "null"]}}},
        "count": {"type": "integer"},
        "anything": {},
    },
    "$defs": {"Entity": {"type": "object", "properties": {"name": {"type": "string"}, "note": {"type": "string"}}}},
}
TEXT = 'line one\n"quoted" \\ back\tslash\nü € 日本 \U0001f600\n'


async def _stored(services: Services, content: str, scope: str = SCOPE) -> str:
    return "offload://outputs/" + (await ingest_text(services, scope, content)).meta.handle


async def _substitute(services: Services, arguments: dict[str, Any], max_bytes: int = 1 << 20) -> dict[str, Any]:
    done = await substitute_outputs(services.store, SCOPE, arguments, SCHEMA, tool="up__write", max_bytes=max_bytes)
    assert done.arguments is not None
    return done.arguments


async def test_a_string_parameter_gets_the_exact_text_at_any_depth(services: Services) -> None:
    uri = await _stored(services, TEXT)
    arguments = {"content": uri, "options": {"body": uri}, "anything": [uri, "kept"], "count": 3}
    got = await _substitute(services, arguments)
    assert got == {"content": TEXT, "options": {"body": TEXT}, "anything": [TEXT, "kept"], "count": 3}
    assert arguments["content"] == uri  # the caller's arguments are not changed


async def test_a_json_parameter_gets_the_json_value(services: Services) -> None:
    entities = [{"name": "a", "note": "x"}, {"name": "b", "note": "y"}]
    got = await _substitute(services, {"entities": await _stored(services, json.dumps(entities, indent=2))})
    assert got == {"entities": entities}
    # inside an array of $ref objects, a string property is text again
    uri = await _stored(services, TEXT)
    assert await _substitute(services, {"entities": [{"name": "n", "note": uri}]}) == {
        "entities": [{"name": "n", "note": TEXT}]
    }


async def test_what_only_looks_like_an_output_is_passed_as_it_is(services: Services) -> None:
    uri = await _stored(services, TEXT)
    handle = uri.removeprefix("offload://outputs/")
    arguments = {"content": handle, "anything": [f"see {uri}", "offload://output/" + handle, "OFFLOAD://outputs/x"]}
    assert await _substitute(services, arguments) == arguments


# Each: arguments (with {uri}/{json}/{blob}/{other} for outputs), the error class, words of its message.
REFUSED = [
    ({"content": "offload://outputs/out_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, UnknownHandle, "not a stored output"),
    ({"content": "{other}"}, UnknownHandle, "not a stored output"),  # another session's: same as unknown
    ({"content": "offload://outputs/../../etc/passwd"}, InvalidHandle, "not a valid handle"),
    ({"content": "offload://outputs/"}, InvalidHandle, "not a valid handle"),
    ({"anything": ["{uri} "]}, InvalidHandle, "not a valid handle"),  # meant as an output: never sent as text
    ({"short": "{uri}"}, ArgumentNotSubstituted, "at most 10"),
    ({"count": "{uri}"}, ArgumentNotSubstituted, "not a JSON value"),
    ({"count": "{json}"}, ArgumentNotSubstituted, "holds a JSON array"),
    ({"options": "{json}"}, ArgumentNotSubstituted, "takes object"),
    ({"content": "{blob}"}, ArgumentNotSubstituted, "is binary"),
    ({"content": "{uri}", "anything": ["{uri}", "{uri}"]}, ArgumentNotSubstituted, "over the 100 bytes"),
]


@pytest.mark.parametrize(("arguments", "error", "words"), REFUSED)
async def test_refused_clearly(services: Services, arguments: dict[str, Any], error: type, words: str) -> None:
    outputs = {
        "uri": await _stored(services, TEXT),
        "json": await _stored(services, "[1, 2]"),
        "other": await _stored(services, TEXT, OTHER),
        "blob": "offload://outputs/"
        + (await ingest_blob(services, SCOPE, b"\x89PNG", mime_type="image/png")).meta.handle,
    }

    def filled(value: Any) -> Any:
        if isinstance(value, list):
            return [filled(v) for v in value]
        return value.format(**outputs) if isinstance(value, str) else value

    with pytest.raises(error) as raised:
        await _substitute(services, {k: filled(v) for k, v in arguments.items()}, max_bytes=100)
    assert words in str(raised.value) and isinstance(raised.value, OffloadError)
    assert "Traceback" not in str(raised.value) and SCOPE not in str(raised.value)


def test_the_proxy_says_how_once_in_its_own_tool() -> None:
    assert "offload://outputs/<handle>" in (STATUS_TOOL_DEF.description or "")


# -- through the proxy, real upstream servers -------------------------------------------------------------------------
pytestmark_real = pytest.mark.parametrize("mode", ERAS)


@pytestmark_real
async def test_a_large_file_read_through_the_proxy_is_written_back_byte_for_byte(
    services: Services, tmp_path: Path, mode: str
) -> None:
    rows = [f'{n:06d},{"é" * (n % 7)},"quoted, {n}",\\path\\{n}\t€' for n in range(60_000)]
    original = tmp_path / "in.csv"
    original.write_bytes(("\r\n".join(rows) + "\r\n").encode())
    config = {"mcpServers": {"fs": npm_entry("server-filesystem", str(tmp_path))}}
    async with running_proxy(services, config) as server, Client(server, mode=mode) as client:
        read = await client.call_tool("fs__read_text_file", {"path": str(original)})
        handle = text_of(read).split("Stored as ", 1)[1].split()[0]
        assert len(text_of(read)) < 6_000  # the content never came to the client
        copy = tmp_path / "copy.csv"
        written = await client.call_tool(
            "fs__write_file", {"path": str(copy), "content": f"offload://outputs/{handle}"}
        )
        assert not written.is_error, text_of(written)
        assert copy.read_bytes() == original.read_bytes()

        literal = tmp_path / "literal.txt"  # a bare handle is a value like any other
        await client.call_tool("fs__write_file", {"path": str(literal), "content": handle})
        assert literal.read_text() == handle

        missing = tmp_path / "missing.txt"
        unknown = "offload://outputs/out_aaaaaaaaaaaaaaaaaaaaaaaaaa"
        refused = await client.call_tool("fs__write_file", {"path": str(missing), "content": unknown})
        assert refused.is_error and not missing.exists()
        assert "not a stored output of this session" in text_of(refused) and "Nothing was sent" in text_of(refused)
        assert handle in text_of(refused)  # and which outputs there are


def _stats(store: Path, *args: str) -> str:
    script = Path(sys.executable).with_name("mcp-offload")
    command = [str(script) if script.exists() else "mcp-offload", "stats", "--store", str(store), *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_what_a_handle_argument_kept_out_is_counted_in_the_session_the_record_and_stats(
    services: Services, store_dir: Path, tmp_path: Path
) -> None:
    """The content the model did not write into its call (the output's tokens minus the URI's) is a saving: in
    proxy_status, in the durable record under the upstream's server and tool, and in `mcp-offload stats`. A refused
    call and an upstream error count nothing."""
    original = tmp_path / "in.txt"
    original.write_text("".join(f"{n:05d} the quick brown fox jumps over the lazy dog\n" for n in range(3_000)))
    config = {"mcpServers": {"fs": npm_entry("server-filesystem", str(tmp_path))}}
    async with running_proxy(services, config) as server, Client(server) as client:
        read = await client.call_tool("fs__read_text_file", {"path": str(original)})
        uri = "offload://outputs/" + text_of(read).split("Stored as ", 1)[1].split()[0]
        for n in range(2):
            written = await client.call_tool("fs__write_file", {"path": str(tmp_path / f"copy{n}.txt"), "content": uri})
            assert not written.is_error, text_of(written)
        unknown = uri[:-1] + ("b" if uri.endswith("a") else "a")  # another handle (not the same one, 1 run in 32)
        refused = await client.call_tool("fs__write_file", {"path": str(tmp_path / "x.txt"), "content": unknown})
        outside = await client.call_tool("fs__write_file", {"path": "/proc/nope/denied.txt", "content": uri})
        assert refused.is_error and outside.is_error  # neither counts
        status = await client.call_tool("proxy_status", {})
    count = services.tokens.count
    each = count(original.read_text()) - count(uri)
    assert each > 30_000
    savings = result_of(status)["savings"]
    assert (savings["arguments_by_handle"], savings["tokens_passed_by_handle"]) == (2, 2 * each)
    assert savings["tokens_net_saving"] == savings["tokens_kept_out"] + 2 * each - savings["tokens_retrieved"]
    assert f"Passed to tools by handle: 2 stored output(s), {2 * each:,} tokens" in text_of(status)

    await services.savings.flush()
    doc = json.loads(_stats(store_dir, "--json", "--days", "1"))
    rows = {(r["server"], r["tool"]): r for r in doc["days"][-1]["rows"]}
    write = rows[("fs", "write_file")]
    assert (write["results_seen"], write["arguments_by_handle"], write["tokens_passed_by_handle"]) == (3, 2, 2 * each)
    assert rows[("fs", "read_text_file")]["tokens_passed_by_handle"] == 0
    assert doc["total"]["tokens_passed_by_handle"] == 2 * each
    table = _stats(store_dir).splitlines()
    header = table[0].split()
    assert header[3:] == ["seen", "offloaded", "kept", "out", "by", "handle", "pulled", "back", "net", "saved"]
    line = next(line.split() for line in table if line.split()[1:3] == ["fs", "write_file"])
    assert line[3:] == ["3", "0", "0", f"{2 * each:,}", "0", f"{2 * each:,}"]


@pytestmark_real
async def test_a_json_output_becomes_an_array_argument(services: Services, tmp_path: Path, mode: str) -> None:
    entry = npm_entry("server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")})
    entities = [{"name": f"svc-{n}", "entityType": "service", "observations": [f"port {8000 + n}"]} for n in range(3)]
    async with running_proxy(services, {"mcpServers": {"memory": entry}}) as server, Client(server, mode=mode) as c:
        stored = await c.call_tool("offload", {"content": json.dumps(entities), "name": "entities"})
        handle = text_of(stored).split("Stored as ", 1)[1].split()[0]
        created = await c.call_tool("memory__create_entities", {"entities": f"offload://outputs/{handle}"})
        assert not created.is_error, text_of(created)
        graph = json.loads(text_of(await c.call_tool("memory__read_graph", {})))
        assert [e["name"] for e in graph["entities"]] == ["svc-0", "svc-1", "svc-2"]
        assert graph["entities"][2]["observations"] == ["port 8002"]


async def test_lazy_tools_call_tool_substitutes_too(services: Services, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(TEXT, encoding="utf-8")
    config = {"mcpServers": {"fs": npm_entry("server-filesystem", str(tmp_path))}}
    async with running_proxy(services, config, lazy_tools=True) as server, Client(server) as client:
        handle = text_of(await client.call_tool("offload", {"content": TEXT})).split("Stored as ", 1)[1].split()[0]
        arguments = {"path": str(tmp_path / "b.txt"), "content": f"offload://outputs/{handle}"}
        done = await client.call_tool("call_tool", {"name": "fs__write_file", "arguments": arguments})
        assert not done.is_error, text_of(done)
    assert (tmp_path / "b.txt").read_bytes() == (tmp_path / "a.txt").read_bytes()


@pytest.mark.real_agent
def test_claude_code_copies_a_file_through_the_proxy_without_reading_it(tmp_path: Path) -> None:
    """The user story: Claude Code headless, its model scripted, reads a 2 MB file through the proxy (offloaded: it
    is shown a reference) and writes it elsewhere by naming the stored output; the copy is byte for byte."""
    work = tmp_path / "work"
    work.mkdir()
    original = work / "report.md"
    original.write_text("".join(f'## Section {n}\nText of section {n}: ü € "q".\n\n' for n in range(40_000)))
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"mcpServers": {"fs": npm_entry("server-filesystem", str(work))}}))
    args = ["-m", "mcp_offload", "--store", str(tmp_path / "store"), "--config", str(servers)]
    offload = {"command": sys.executable, "args": args}

    def next_call(done: list[Exchange]) -> tuple[str, dict[str, Any]] | None:
        if not done:
            return "mcp__offload__fs__read_text_file", {"path": str(original)}
        if len(done) == 1:
            handle = (done[0].shown or "").split("Stored as ", 1)[1].split()[0]
            content = f"offload://outputs/{handle}"
            return "mcp__offload__fs__write_file", {"path": str(work / "copy.md"), "content": content}
        return None

    api = run_claude_code(tmp_path, {"offload": offload}, next_call)
    read, written = api.exchanges
    assert read.shown is not None and load_counter().count(read.shown) < 1_000  # a reference, not ~720k tokens
    assert written.shown is not None and "Successfully wrote" in written.shown
    assert (work / "copy.md").read_bytes() == original.read_bytes()
