"""The four retrieval tools + offload + list, through the real MCP client, in both protocol eras."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from mcp_offload.core.services import Services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.settings import Settings
from support import ERAS, resource_text, text_of

pytestmark = pytest.mark.parametrize("mode", ERAS)


@pytest.fixture(params=["fs", "redis"])
def settings(request: pytest.FixtureRequest, store_dir: Path) -> Settings:
    """Every tool test runs on both store backends."""
    store = str(store_dir) if request.param == "fs" else request.getfixturevalue("redis_url")
    return Settings(store=store, jq_timeout_s=3.0, jq_workers=1)


API = json.dumps(
    {
        "total": 300,
        "items": [
            {"id": i, "name": f"item-{i}", "state": "open" if i % 3 else "closed", "tags": ["a", "b"][: i % 3]}
            for i in range(300)
        ],
    },
    indent=2,
)
LOG = "".join(f"line {i} INFO all good\n" for i in range(1, 5001)).replace(
    "line 3210 INFO all good", "line 3210 ERROR disk full on /var ü€😀"
)


async def test_catalog(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {
            "offload",
            "read_large_output",
            "search_large_output",
            "query_large_output",
            "list_outputs",
        }
        hints = {name: tool.annotations.read_only_hint if tool.annotations else None for name, tool in tools.items()}
        for name in ("read_large_output", "search_large_output", "query_large_output", "list_outputs"):
            assert hints[name] is True
        assert hints["offload"] is False
        assert tools["read_large_output"].input_schema["properties"].keys() == {
            "handle",
            "start",
            "end",
            "start_line",
            "end_line",
        }
        assert tools["search_large_output"].input_schema["properties"].keys() == {
            "pattern",
            "handle",
            "case_sensitive",
            "literal",
            "max_results",
            "context_lines",
            "scope",  # issue 10: optional, default "line" (today's behaviour)
            "ranked",  # issue 19: optional, default false (today's behaviour)
        }
        assert tools["query_large_output"].input_schema["required"] == ["handle", "query"]
        assert "Example" in (tools["offload"].description or "")
        assert '"Stored as out_…"' in (client.instructions or "")  # what a stored result looks like, in one line


async def test_offload_then_retrieve(server: OffloadServer, mode: str, services: Services) -> None:
    async with Client(server, mode=mode) as client:
        r = await client.call_tool("offload", {"content": API, "name": "api"})
        assert not r.is_error, text_of(r)
        assert services.tokens.count(text_of(r)) <= services.settings.preview_tokens  # the whole reference
        ref = result_of(r)
        assert ref["kind"] == "json" and ref["chars"] == len(API) and ref["lines"] == API.count("\n") + 1
        assert ref["handle"].startswith("out_") and ref["handle"] in text_of(r)
        assert ref["tokens"] > 5000 and not ref["tokens_estimated"]
        assert len(text_of(r)) < 4000  # the model sees a preview, not 20k+ tokens
        api = ref["handle"]

        r = await client.call_tool("offload", {"content": LOG, "name": "log"})
        assert services.tokens.count(text_of(r)) <= services.settings.preview_tokens
        log = result_of(r)["handle"]
        assert result_of(r)["kind"] == "text"

        args = {"pattern": "error disk", "handle": log, "context_lines": 1}
        r = await client.call_tool("search_large_output", args)
        m = result_of(r)["matches"]
        assert result_of(r)["total_matches"] == 1 and m[0]["line"] == 3210
        assert LOG[m[0]["start"] - 1 : m[0]["end"]].lower() == "error disk"
        before, hit, after = LOG.splitlines()[3208:3211]
        # one output searched: named once in the first line, not on every hit and context line
        assert text_of(r).splitlines() == [
            f"1 match(es) for 'error disk' in {log}; showing 1:",
            f"  3209-  {before}",
            f"3210: {hit}",  # the whole line is shown: its number reads it, no character positions
            f"  3211-  {after}",
        ]

        r = await client.call_tool("read_large_output", {"handle": log, "start_line": 3209, "end_line": 3211})
        assert result_of(r)["text"] == "".join(LOG.splitlines(keepends=True)[3208:3211])
        assert "ERROR disk full" in text_of(r)

        r = await client.call_tool("read_large_output", {"handle": api, "start": 10, "end": 60})
        assert result_of(r)["text"] == API[9:60]

        r = await client.call_tool(
            "query_large_output", {"handle": api, "query": '[.items[] | select(.state == "closed")] | length'}
        )
        assert not r.is_error, text_of(r)
        assert result_of(r)["result"].strip() == "100"

        r = await client.call_tool("search_large_output", {"pattern": "item-29[0-9]\\b"})  # all outputs
        assert result_of(r)["total_matches"] == 10
        assert {x["handle"] for x in result_of(r)["matches"]} == {api}
        hits, places = text_of(r).splitlines()[1::2], text_of(r).splitlines()[2::2]  # a JSON hit, then its place
        assert len(hits) == 10 and all(line.startswith(f"{api}:") for line in hits)  # across outputs: named
        assert all(line.startswith("  at .items[") for line in places)

        r = await client.call_tool("list_outputs", {})
        assert [o["handle"] for o in result_of(r)["outputs"]] == [log, api]
        assert result_of(r)["outputs"][1]["name"] == "api"

        resources = (await client.list_resources()).resources
        assert {str(x.uri) for x in resources} == {f"offload://outputs/{api}", f"offload://outputs/{log}"}
        contents = (await client.read_resource(f"offload://outputs/{log}")).contents
        assert resource_text(contents[0]) == LOG
        templates = (await client.list_resource_templates()).resource_templates
        assert templates[0].uri_template == "offload://outputs/{handle}"


async def test_a_hit_on_a_cut_line_gives_its_character_positions(server: OffloadServer, mode: str) -> None:
    """A minified JSON is one line: its line number cannot read a hit, so the hit carries its characters, which
    read it (a whole shown line carries none, see test_offload_then_retrieve)."""
    doc = json.dumps([{"id": n, "name": f"item-{n}"} for n in range(500)], separators=(",", ":"))
    async with Client(server, mode=mode) as client:
        handle = result_of(await client.call_tool("offload", {"content": doc}))["handle"]
        r = await client.call_tool("search_large_output", {"pattern": "item-321", "handle": handle})
        shown = re.search(r"^1 \[chars (\d+)–(\d+)\]: \[[\d,]+ chars cut\]…", text_of(r).splitlines()[1])
        assert shown, text_of(r)
        start, end = int(shown.group(1)), int(shown.group(2))
        read = await client.call_tool("read_large_output", {"handle": handle, "start": start, "end": end})
        assert result_of(read)["text"] == "item-321"


async def test_read_cap_and_continuation(server: OffloadServer, mode: str, services: Services) -> None:
    big = "".join(f"{i:06d} lorem ipsum dolor sit amet consectetur\n" for i in range(20_000))
    async with Client(server, mode=mode) as client:
        handle = result_of(await client.call_tool("offload", {"content": big}))["handle"]
        r = await client.call_tool("read_large_output", {"handle": handle})
        s = result_of(r)
        assert s["truncated"] and s["tokens"] <= services.settings.read_max_tokens
        assert s["text"] == big[: len(s["text"])] and s["next_start"] == len(s["text"]) + 1
        assert f"start={s['next_start']}" in text_of(r)
        # follow the continuation by lines until the end: the pieces reassemble the original exactly
        pieces, line = [], 1
        while line is not None:
            r = await client.call_tool("read_large_output", {"handle": handle, "start_line": line})
            assert not r.is_error, text_of(r)
            pieces.append(result_of(r)["text"])
            line = result_of(r)["next_start"]
        assert "".join(pieces) == big


BAD_CALLS = [
    ("read_large_output", {"handle": "out_aaaaaaaaaaaaaaaaaaaaaaaaaa"}, "no output"),
    ("read_large_output", {"handle": "../../etc/passwd"}, "not a valid handle"),
    ("read_large_output", {"handle": "{h}", "start": 0}, "1-based"),
    ("read_large_output", {"handle": "{h}", "start": 50, "end": 10}, "reversed"),
    ("read_large_output", {"handle": "{h}", "start": 10**9}, "past the end"),
    ("read_large_output", {"handle": "{h}", "start": 1, "start_line": 1}, "not both"),
    ("read_large_output", {"handle": "{h}", "bogus": 1}, "unknown parameter"),
    ("read_large_output", {"handle": "{h}", "start": "x"}, "start"),
    ("search_large_output", {"pattern": "(a)\\1", "handle": "{h}"}, "backreference"),
    ("search_large_output", {"pattern": "(", "handle": "{h}"}, "pattern"),
    ("search_large_output", {"pattern": "", "handle": "{h}"}, "empty"),
    ("query_large_output", {"handle": "{h}", "query": ".[["}, "syntax error"),
    ("query_large_output", {"handle": "{t}", "query": "."}, "search_large_output"),
    ("offload", {"content": ""}, "empty"),
    ("offload", {}, "content"),
]


@pytest.mark.parametrize(("tool", "args", "expect"), BAD_CALLS)
async def test_bad_input_is_a_clear_error(
    server: OffloadServer, mode: str, tool: str, args: dict[str, Any], expect: str
) -> None:
    async with Client(server, mode=mode) as client:
        h = result_of(await client.call_tool("offload", {"content": API}))["handle"]
        t = result_of(await client.call_tool("offload", {"content": LOG}))["handle"]
        args = {k: (v.format(h=h, t=t) if isinstance(v, str) else v) for k, v in args.items()}
        r = await client.call_tool(tool, args)
        assert r.is_error
        message = text_of(r)
        assert expect.lower() in message.lower(), message
        assert "Traceback" not in message and "/tmp" not in message
        # nothing was lost or changed
        r = await client.call_tool("read_large_output", {"handle": h, "start": 1, "end": 100})
        assert result_of(r)["text"] == API[:100]
        assert len(result_of(await client.call_tool("list_outputs", {}))["outputs"]) == 2


async def test_unknown_handle_lists_known_ones(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        h = result_of(await client.call_tool("offload", {"content": LOG, "name": "log"}))["handle"]
        r = await client.call_tool("read_large_output", {"handle": "out_" + "b" * 26})
        assert r.is_error and h in text_of(r)


async def test_a_handle_from_another_process_suggests_a_shared_session(services: Services, mode: str) -> None:
    """A stdio server's session is its own: a handle stored by another process (or a Compactor) is unknown here,
    and the error says how to share one. A server run with --session NAME gets no such advice."""
    stored = build_server(services, session="shared")
    async with Client(stored, mode=mode) as writer:
        h = result_of(await writer.call_tool("offload", {"content": LOG}))["handle"]
    async with Client(build_server(services), mode=mode) as private:
        r = await private.call_tool("read_large_output", {"handle": h})
    assert r.is_error and "start every process with the same --session NAME" in text_of(r)
    async with Client(build_server(services, session="other"), mode=mode) as named:
        r = await named.call_tool("read_large_output", {"handle": h})
    assert r.is_error and "--session" not in text_of(r)
    async with Client(build_server(services, session="shared"), mode=mode) as shared:
        assert not (await shared.call_tool("read_large_output", {"handle": h})).is_error


async def test_sessions_are_isolated(services: Services, mode: str) -> None:
    """Two clients of one server (two runs, like two stdio processes on one store) never see each other."""
    server = build_server(services)
    async with Client(server, mode=mode) as alice, Client(server, mode=mode) as bob:
        h = result_of(await alice.call_tool("offload", {"content": "alice's secret\n" * 100}))["handle"]
        for tool, args in [
            ("read_large_output", {"handle": h}),
            ("query_large_output", {"handle": h, "query": "."}),
            ("search_large_output", {"pattern": "secret", "handle": h}),
        ]:
            r = await bob.call_tool(tool, args)
            assert r.is_error and "no output" in text_of(r).lower(), (tool, text_of(r))
            assert "alice" not in text_of(r)
        r = await bob.call_tool("search_large_output", {"pattern": "secret"})
        assert result_of(r)["total_matches"] == 0
        assert result_of(await bob.call_tool("list_outputs", {}))["outputs"] == []
        assert (await bob.list_resources()).resources == []
        with pytest.raises(MCPError):
            await bob.read_resource(f"offload://outputs/{h}")
        r = await alice.call_tool("read_large_output", {"handle": h, "end": 14})
        assert result_of(r)["text"] == "alice's secret"


async def test_unicode_and_surrogates_round_trip(server: OffloadServer, mode: str) -> None:
    text = "héllo 😀 wörld\r\n" * 50 + "tail\u0301 no newline"
    async with Client(server, mode=mode) as client:
        r = await client.call_tool("offload", {"content": text})
        h = result_of(r)["handle"]
        assert result_of(r)["chars"] == len(text)
        r = await client.call_tool("read_large_output", {"handle": h, "start": 7, "end": 7})
        assert result_of(r)["text"] == "😀"
        r = await client.call_tool("read_large_output", {"handle": h, "start_line": 51})
        assert result_of(r)["text"] == "tail\u0301 no newline"


async def test_content_over_the_cap_is_refused_and_nothing_stored(tmp_path: Path, mode: str) -> None:
    from mcp_offload.core.services import build_services

    services = build_services(Settings(store=str(tmp_path / "s"), max_output_bytes=1000))
    try:
        async with Client(build_server(services), mode=mode) as client:
            for content in ("x" * 1001, "€" * 400):  # 1,001 chars; 400 chars but 1,200 bytes
                r = await client.call_tool("offload", {"content": content})
                assert r.is_error and "over this server's cap of 1,000 bytes" in text_of(r), text_of(r)
            assert result_of(await client.call_tool("list_outputs", {}))["outputs"] == []
            assert not (await client.call_tool("offload", {"content": "x" * 1000})).is_error
    finally:
        await services.aclose()
