"""JSON-aware search: every hit in a JSON / JSON Lines output carries a jq path (checked by running it with jq)
and a breadcrumb; scope="record" returns the record holding each hit. Real MCP client through the server for the
user-facing cases (directory tree, nested API response, 2 MB one-line JSON, JSON Lines, Redis lazy buffers);
a property test over random documents (pretty and minified, escapes, unicode) for the paths themselves."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import anyio
import jq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from mcp_offload.core.outputs import SessionScope
from mcp_offload.core.render import record_text
from mcp_offload.core.services import Services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.retrieve import json_structure, json_structure_file
from mcp_offload.retrieve.json_hits import json_hits
from mcp_offload.retrieve.pattern import compile_pattern
from mcp_offload.retrieve.search import SearchOptions, search_output
from mcp_offload.store.base import Kind, OutputMeta, StoredOutput
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.tokens import load_counter
from support import ERAS, text_of


async def offload(client: Client, content: str) -> str:
    result = await client.call_tool("offload", {"content": content})
    assert not result.is_error, text_of(result)
    return str(result_of(result)["handle"])


async def search(client: Client, **arguments: Any) -> tuple[str, dict[str, Any]]:
    result = await client.call_tool("search_large_output", arguments)
    assert not result.is_error, text_of(result)
    assert result_of(result) is not None
    return text_of(result), result_of(result)


async def query(client: Client, handle: str, program: str) -> Any:
    result = await client.call_tool("query_large_output", {"handle": handle, "query": program, "compact": True})
    assert not result.is_error, text_of(result)
    return [json.loads(line) for line in text_of(result).splitlines()]


def directory_tree(packages: int = 100) -> list[dict[str, Any]]:
    """Shaped like server-filesystem's directory_tree: name / type / children."""

    def file(name: str) -> dict[str, Any]:
        return {"name": name, "type": "file"}

    def directory(name: str, children: list[dict[str, Any]]) -> dict[str, Any]:
        return {"name": name, "type": "directory", "children": children}

    return [
        directory(
            f"pkg{p:03}",
            [
                directory(
                    "src",
                    [
                        directory(f"mod{m}", [*(file(f"f{f}.py") for f in range(12)), file(f"plan-{p:03}-{m}.md")])
                        for m in range(2)
                    ],
                ),
                file("README.md"),
            ],
        )
        for p in range(packages)
    ]


def api_response(orders: int = 300) -> dict[str, Any]:
    return {
        "data": {
            "orders": [
                {
                    "id": f"ord-{i:04}",
                    "customer": {"name": f"Customer {i}", "email": f"c{i}@example.com"},
                    "lines": [{"sku": f"SKU-{i}-{j}", "qty": j + 1} for j in range(3)],
                    "note": "fragile" if i == 57 else "",
                }
                for i in range(orders)
            ]
        },
        "meta": {"page": 1},
    }


@pytest.mark.parametrize("mode", ERAS)
async def test_directory_tree_hit_says_where_it_sits(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        handle = await offload(client, json.dumps(directory_tree(), indent=2))
        text, out = await search(client, pattern="plan-077-1.md", handle=handle, literal=True)
        [hit] = out["matches"]
        assert hit["json_path"] == ".[77].children[0].children[1].children[12].name"
        assert hit["breadcrumb"] == "pkg077 › src › mod1 › plan-077-1.md"
        assert hit.get("record") is None
        assert "at .[77].children[0].children[1].children[12].name (pkg077 › src › mod1 › plan-077-1.md)" in text
        assert await query(client, handle, hit["json_path"]) == ["plan-077-1.md"]
        # A hit inside a key gets its member's path.
        _, keyed = await search(client, pattern='"type"', handle=handle, literal=True, max_results=1)
        assert keyed["matches"][0]["json_path"] == ".[0].type"


@pytest.mark.parametrize("pretty", [True, False])
async def test_nested_api_response_record_in_one_call(server: OffloadServer, pretty: bool) -> None:
    document = api_response()
    async with Client(server) as client:
        handle = await offload(client, json.dumps(document, indent=2 if pretty else None))
        text, out = await search(client, pattern="ord-0057|fragile", handle=handle, scope="record")
        assert [m["json_path"] for m in out["matches"]] == [".data.orders[57].id", ".data.orders[57].note"]
        [record] = out["records"]
        assert record["json_path"] == ".data.orders[57]"
        assert record["matches"] == 2
        assert not record["truncated"]
        assert json.loads(record["text"]) == document["data"]["orders"][57]
        # One record holding every match: its place is the whole header (path and lines; where the record is on
        # part of one line, its characters too), and the record follows on one line.
        head, shown = text.split("\n")
        place = f"[lines {record['start_line']:,}–{record['end_line']:,}]" if pretty else (
            f"[line 1, chars {record['start']}–{record['end']}]"
        )  # fmt: skip
        assert head == f".data.orders[57] {place}:"
        assert json.loads(shown) == document["data"]["orders"][57]
        assert shown.count("ord-0057") == 1 and shown.count("fragile") == 1  # each hit once: in its record
        # each of its lines as stored (indentation aside): a piece of one, searched for literally, is found again
        assert all(line.strip() in shown for line in record["text"].split("\n"))
        # The record's character range reads back the same text.
        read = await client.call_tool(
            "read_large_output", {"handle": handle, "start": record["start"], "end": record["end"]}
        )
        assert result_of(read) is not None and result_of(read)["text"] == record["text"]
        # scope="line" (the default) has no records.
        _, lines = await search(client, pattern="ord-0057", handle=handle)
        assert lines.get("records") is None and lines["matches"][0]["json_path"] == ".data.orders[57].id"


async def test_two_megabyte_single_line_keeps_a_short_excerpt(server: OffloadServer) -> None:
    document = api_response(orders=11000)
    content = json.dumps(document, separators=(",", ":"))
    assert len(content) >= 2_000_000 and "\n" not in content
    async with Client(server) as client:
        handle = await offload(client, content)
        _, out = await search(client, pattern="SKU-8123-2", handle=handle, literal=True, scope="record")
        [hit] = out["matches"]
        assert hit["json_path"] == ".data.orders[8123].lines[2].sku"
        assert hit["breadcrumb"] == "ord-8123"  # sku is not an identifying field name
        assert len(hit["text"]) < 400
        [record] = out["records"]
        assert json.loads(record["text"]) == document["data"]["orders"][8123]
        assert await query(client, handle, hit["json_path"]) == ["SKU-8123-2"]


async def test_json_lines_give_the_record_number_and_a_path_within_it(server: OffloadServer) -> None:
    rows = [{"user": {"login": f"user{i}", "id": i}, "event": "push" if i != 12 else "fork"} for i in range(40)]
    async with Client(server) as client:
        handle = await offload(client, "\n".join(json.dumps(r) for r in rows) + "\n")
        text, out = await search(client, pattern='"fork"', handle=handle, scope="record")
        [hit] = out["matches"]
        assert (hit["record"], hit["json_path"], hit.get("breadcrumb")) == (12, ".event", None)
        assert text == f"record 12 [line 13]:\n{json.dumps(rows[12])}"  # the hit once, in its record
        [record] = out["records"]
        assert record["record"] == 12 and record["json_path"] == "."
        assert json.loads(record["text"]) == rows[12]
        _, login = await search(client, pattern="user33", handle=handle, literal=True)
        assert (login["matches"][0]["record"], login["matches"][0]["json_path"]) == (33, ".user.login")
        assert login["matches"][0]["breadcrumb"] == "user33"
        assert (await query(client, handle, ".user.login"))[33] == "user33"


async def test_a_few_records_each_on_one_line_under_where_its_hits_are(server: OffloadServer) -> None:
    """Several records: the first line counts the hits and names the output; each record's header names its path,
    lines and hits' paths (its own lines are gone on one line), and the record follows compactly, as stored."""
    orders = [{"id": f"ord-{i}", "status": "late" if i in (3, 17, 30) else "ok", "note": "a  b"} for i in range(40)]
    async with Client(server) as client:
        handle = await offload(client, json.dumps({"orders": orders}, indent=4))
        text, out = await search(client, pattern='"late"', handle=handle, literal=True, scope="record")
        lines = text.split("\n")
        assert lines[0] == f"3 match(es) for '\"late\"' in {handle}; showing 3, in 3 record(s):"
        pairs = zip(lines[1::2], lines[2::2], strict=True)
        for (head, shown), i, record in zip(pairs, (3, 17, 30), out["records"], strict=True):
            place = f"[lines {record['start_line']:,}–{record['end_line']:,}]"
            hit = f".orders[{i}].status (line {record['start_line'] + 2:,})"
            assert head == f"── .orders[{i}] {place} · 1 match at {hit}:"
            assert json.loads(shown) == orders[i] and '"note": "a  b"' in shown  # a string's spaces are its own


async def test_a_long_record_keeps_its_lines_without_their_shared_indentation(server: OffloadServer) -> None:
    """Over 1,500 characters one line is hard to read: the record keeps its lines, indented from its own depth."""
    orders = [{"id": f"ord-{i}", "lines": [{"sku": f"sku-{i}-{k}", "qty": k} for k in range(80)]} for i in range(5)]
    async with Client(server) as client:
        handle = await offload(client, json.dumps({"data": {"orders": orders}}, indent=2))
        text, out = await search(client, pattern="sku-2-7", handle=handle, literal=True, scope="record")
        [record] = out["records"]
        head, shown = text.split("\n", 1)
        assert head == f".data.orders[2] [lines {record['start_line']:,}–{record['end_line']:,}]:"
        assert shown == json.dumps(orders[2], indent=2)  # as if printed on its own
        assert len(shown.replace("\n", "")) > 1_500


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ('{\n    "a": 1,\n    "b": [\n      "x  y"\n    ]\n  }', '{"a": 1,"b": ["x  y"]}'),
        ('{"a": 1}', '{"a": 1}'),  # JSON Lines: already one line
        ('{\r\n  "a": "\u2028 \u2029"\r\n}', '{"a": "\u2028 \u2029"}'),  # only \n ends a line
        ('[\n    "cut at the cap, inside a string:  ', '["cut at the cap, inside a string:  '),  # its end kept
    ],
)
def test_a_record_on_one_line_keeps_every_value(stored: str, shown: str) -> None:
    assert record_text(stored) == shown
    if not stored.startswith("[\n"):
        assert json.loads(record_text(stored)) == json.loads(stored)


async def test_a_cut_record_says_how_to_read_the_rest(server: OffloadServer) -> None:
    big = [{"id": "needle", "blob": [f"word{i}" for i in range(20_000)]}, {"id": "other"}]
    async with Client(server) as client:
        handle = await offload(client, json.dumps(big))
        text, out = await search(client, pattern="needle", handle=handle, scope="record")
        [record] = out["records"]
        assert record["json_path"] == ".[0]" and record["truncated"]
        assert record["next_start"] == record["start"] + len(record["text"])
        assert f"start={record['next_start']}, end={record['end']})" in text


async def test_text_outputs_have_no_json_paths_and_answer_record_scope_with_lines(server: OffloadServer) -> None:
    """scope="record" on a text output: its matching lines and why, in the same call (a refusal cost a round trip
    to a model that asked for records first without knowing the kind)."""
    async with Client(server) as client:
        handle = await offload(client, "alpha\nbeta\n" * 50)
        _, out = await search(client, pattern="beta", handle=handle, max_results=1)
        assert "json_path" not in out["matches"][0] and "breadcrumb" not in out["matches"][0]  # absent, not null
        text, records = await search(client, pattern="beta", handle=handle, scope="record", max_results=2)
        assert [m["line"] for m in records["matches"]] == [2, 4] and records.get("records") is None
        assert text.split("\n") == [
            f"50 match(es) for 'beta' in {handle}; showing 2:",
            f'scope="record" applies to JSON and JSON Lines outputs only; {handle} is text, so these are its matching '
            "lines (read around one with read_large_output).",
            "2: beta",
            "4: beta",
            "[more matches not shown: raise max_results or narrow the pattern]",
        ]


async def test_redis_lazy_buffer_outputs_get_paths_too(redis_offload_server: OffloadServer) -> None:
    document = api_response(orders=5000)
    content = json.dumps(document, indent=1)
    assert len(content) > 1 << 20  # stored as a lazy buffer
    async with Client(redis_offload_server) as client:
        handle = await offload(client, content)
        _, out = await search(client, pattern="Customer 4321", handle=handle, literal=True, scope="record")
        assert out["matches"][0]["json_path"] == ".data.orders[4321].customer.name"
        assert json.loads(out["records"][0]["text"]) == document["data"]["orders"][4321]


# -- property: every path, run by jq, holds what was matched -----------------------------------------------------

COUNTER = load_counter()

_KEYS = st.text(st.sampled_from('ab "\\/é✓\n\t_1'), min_size=0, max_size=4)
_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-1000, 1000), st.text(st.sampled_from('xy "\\é✓😀\n\t'), max_size=6)
)
_DOCS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=25,
)


def _stored(text: str, kind: Kind) -> StoredOutput:
    data = text.encode("utf-8")
    index = ContentIndex.build(data)
    return StoredOutput(
        OutputMeta("out_" + "p" * 26, kind, len(data), index.chars, index.lines, 0, True, 1.0), index, data
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    document=_DOCS,
    pretty=st.booleans(),
    interval=st.sampled_from([8, 64, 4096]),
    needle=st.sampled_from(["x", "é", '\\"', "a", "1", "✓"]),
)
def test_every_hit_path_holds_the_match(document: Any, pretty: bool, interval: int, needle: str) -> None:
    text = json.dumps(document, indent=2 if pretty else None, ensure_ascii=False)
    output = _stored(text, "json")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(json_structure, "INTERVAL", interval)
        json_structure.STRUCTURES.clear()
        found = search_output(
            output, compile_pattern(needle, literal=True, case_sensitive=True), SearchOptions(max_results=500)
        )
        placed = json_hits({output.meta.handle: output}, found.matches, records=False, max_tokens=1000, counter=COUNTER)
    json_structure.STRUCTURES.clear()
    program_input = json.dumps(document)
    for match, place in zip(found.matches, placed.places, strict=True):
        assert place is not None
        value = jq.compile(place.json_path).input_text(program_input).first()
        shown = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        last_key = place.json_path.rsplit(".", 1)[-1]
        assert needle in shown or needle in last_key or needle in json.dumps(value, ensure_ascii=False, indent=2), (
            text,
            match,
            place,
        )


# -- the structure index: built in the background after offload, once per output -------------------------------


async def test_a_large_output_gets_its_index_built_in_the_background(
    server: OffloadServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[int] = []
    real = json_structure.build_structure

    def counted(data: Any) -> json_structure.JsonStructure:
        builds.append(len(data))
        return real(data)

    monkeypatch.setattr(json_structure, "build_structure", counted)
    json_structure.STRUCTURES.clear()
    content = json.dumps(api_response(orders=6000), indent=2)
    assert len(content) >= json_structure.WARM_MIN_BYTES
    async with Client(server) as client:
        handle = await offload(client, content)
        deadline = time.monotonic() + 30
        while not any(key[0] == handle for key in list(json_structure.STRUCTURES.items)):  # no search has run
            assert time.monotonic() < deadline, "the background build never finished"
            await anyio.sleep(0.01)
        _, out = await search(client, pattern="fragile", handle=handle, literal=True)
        small = await offload(client, json.dumps(api_response(orders=10)))
        await search(client, pattern="ord-0003", handle=small, literal=True)
    assert out["matches"][0]["json_path"] == ".data.orders[57].note"
    assert builds == [len(content), len(json.dumps(api_response(orders=10)))]  # once each; the small one at search


def test_a_search_arriving_mid_build_waits_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    gate, started = threading.Event(), threading.Event()
    builds: list[int] = []
    real = json_structure.build_structure

    def gated(data: Any) -> json_structure.JsonStructure:
        builds.append(len(data))
        started.set()
        assert gate.wait(10)
        return real(data)

    monkeypatch.setattr(json_structure, "build_structure", gated)
    cache = json_structure._StructureCache(4)
    data = b'[{"id": 1}, {"id": 2}]'
    key = ("out_a", 1.0, len(data))
    assert cache.warm(key, data)
    assert started.wait(10)
    assert not cache.warm(key, data)  # already being built
    assert cache.warm(("out_b", 1.0, len(data)), data)  # queued behind it
    assert not cache.warm(("out_c", 1.0, len(data)), data)  # the queue is full: the first search builds it
    got: list[json_structure.JsonStructure] = []
    waiter = threading.Thread(target=lambda: got.append(cache.get(key, data)))
    waiter.start()
    waiter.join(0.2)
    assert waiter.is_alive() and not got  # waits for the build in progress instead of starting another
    gate.set()
    waiter.join(10)
    assert got and got[0] is cache.items[key]
    deadline = time.monotonic() + 10
    while cache.warming:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert builds == [len(data), len(data)]  # out_a once (warm-up and search shared it), out_b once


async def test_a_record_scoped_answer_holds_each_hit_once(server: OffloadServer) -> None:
    """The hit lines are not listed and then shown again inside their records: each hit is in the answer once, in
    its record when the record is shown, else as its line (a text output's, across the session's outputs)."""
    orders = [{"id": f"ord-{i}", "note": f"hit-{i}-a", "lines": [{"sku": f"hit-{i}-b"}]} for i in range(6)]
    orders += [{"id": f"ord-{i}", "note": "quiet"} for i in range(6, 40)]
    async with Client(server) as client:
        handle = await offload(client, json.dumps({"orders": orders}, indent=2))
        log = await offload(client, "".join(f"log line {i} hit-log-{i}\n" for i in range(3)) + "other\n" * 2000)
        text, out = await search(client, pattern=r"hit-\d+-[ab]", handle=handle, scope="record")
        assert out["total_matches"] == 12 and len(out["records"]) == 6
        for i in range(6):
            assert text.count(f"hit-{i}-a") == 1 and text.count(f"hit-{i}-b") == 1
            assert text.count(f'"ord-{i}"') == 1
        assert text.split("\n")[0].endswith("; showing 12, in 6 record(s):")
        everywhere, out = await search(client, pattern=r"hit-(\d+-[ab]|log-\d)", scope="record")
        assert out["total_matches"] == 15
        for token in [*(f"hit-{i}-{x}" for i in range(6) for x in "ab"), "hit-log-0", "hit-log-1", "hit-log-2"]:
            assert everywhere.count(token) == 1, token
        assert "in 6 record(s) and 3 line(s) outside them:" in everywhere
        assert f"{log}:1: log line 0 hit-log-0" in everywhere


async def test_the_index_is_kept_beside_the_output_for_other_processes(
    services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process on the same store (a gateway or HTTP worker; here: this one with its cache emptied) loads the
    index built at offload from the output's sidecar instead of rebuilding it; a damaged sidecar is rebuilt over."""
    builds: list[int] = []
    real = json_structure.build_structure

    def counted(data: Any) -> json_structure.JsonStructure:
        builds.append(len(data))
        return real(data)

    monkeypatch.setattr(json_structure, "build_structure", counted)
    json_structure.STRUCTURES.clear()
    content = json.dumps(api_response(orders=6000), indent=2)
    async with Client(build_server(services, session="kept")) as client:
        handle = await offload(client, content)
        deadline = time.monotonic() + 60
        while json_structure.STRUCTURES.warming or not builds:
            assert time.monotonic() < deadline, "the background build never finished"
            await anyio.sleep(0.01)
        json_structure.STRUCTURES.clear()  # as a process that never built it
        _, out = await search(client, pattern="fragile", handle=handle, literal=True)
        assert out["matches"][0]["json_path"] == ".data.orders[57].note"
        assert builds == [len(content)]  # loaded, not built again

        json_structure.STRUCTURES.clear()
        sidecar = services.store.sidecar(SessionScope.named("kept").key, handle, json_structure_file.SIDECAR)
        assert sidecar is not None
        other = json_structure_file.dump_structure(real(content.encode()), ("out_other", 0.0, len(content)))
        sidecar.write([other])  # another output's index: refused by the checks
        _, out = await search(client, pattern="fragile", handle=handle, literal=True)
        assert out["matches"][0]["json_path"] == ".data.orders[57].note"
        assert builds == [len(content), len(content)]  # rebuilt over it
