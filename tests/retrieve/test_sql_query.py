"""SQL over tabular outputs (`query_large_output` with SQL): CSV, TSV, JSON Lines and JSON records through a real MCP
client in both protocol eras; SQL told from jq; hostile SQL as a table (files, network, extensions, settings,
writes, runaway queries), each failing cleanly, in bounded time, leaking nothing and leaving the table intact; the
memory limit and the output cap; scoping between sessions; the Redis backend."""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import jq
import pytest
from mcp import Client

from mcp_offload.core import outputs
from mcp_offload.core.services import Services
from mcp_offload.errors import QueryError
from mcp_offload.mcp_server.offload_server import OffloadServer
from mcp_offload.mcp_server.tools import result_of
from mcp_offload.retrieve.sql.detect import is_sql
from mcp_offload.settings import Settings
from support import ERAS, text_of

TIMEOUT_S = 3.0


def orders_csv(rows: int = 5000, sep: str = ",") -> str:
    head = sep.join(["id", "customer", "status", "amount"])
    body = [
        sep.join([str(i), f"cust{i % 50}", ["open", "paid", "refunded"][i % 3], f"{i * 0.5:.2f}"]) for i in range(rows)
    ]
    return "\n".join([head, *body]) + "\n"


@pytest.fixture
def settings(store_dir: Path) -> Settings:
    return Settings(store=str(store_dir), jq_timeout_s=TIMEOUT_S, jq_workers=1, sql_memory_mb=128)


async def offload(client: Client, content: str) -> str:
    result = await client.call_tool("offload", {"content": content})
    assert not result.is_error, text_of(result)
    return str(result_of(result)["handle"])


async def sql(client: Client, handle: str, query: str) -> str:
    result = await client.call_tool("query_large_output", {"handle": handle, "query": query})
    assert not result.is_error, text_of(result)
    return text_of(result)


# -- through the MCP server ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
async def test_sql_over_csv_tsv_jsonl_and_json_records(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        csv_handle = await offload(client, orders_csv())
        got = await sql(
            client, csv_handle, "SELECT status, count(*) AS n, sum(amount) AS total FROM t GROUP BY 1 ORDER BY 1"
        )
        sums = {
            s: sum(i * 0.5 for i in range(5000) if ["open", "paid", "refunded"][i % 3] == s)
            for s in ("open", "paid", "refunded")
        }
        expected = "".join(f"{s},{1667 if s != 'refunded' else 1666},{sums[s]}\n" for s in ("open", "paid", "refunded"))
        assert got == "status,n,total\n" + expected + "\n(3 row(s))"
        tsv_handle = await offload(client, orders_csv(sep="\t"))
        assert (
            await sql(client, tsv_handle, "FROM t WHERE id = 7")
            == "id,customer,status,amount\n7,cust7,paid,3.5\n\n(1 row(s))"
        )
        rows = [{"user": {"login": f"u{i}"}, "score": i % 10, "tags": ["a", "b"][: i % 3]} for i in range(3000)]
        jsonl_handle = await offload(client, "\n".join(json.dumps(r) for r in rows))
        got = await sql(
            client, jsonl_handle, "SELECT user.login, tags FROM t WHERE score = 9 ORDER BY user.login LIMIT 2"
        )
        assert got == 'login,tags\nu1009,"[""a""]"\nu1019,"[""a"", ""b""]"\n\n(2 row(s))'
        json_handle = await offload(client, json.dumps(rows))
        assert (
            await sql(client, json_handle, "SELECT count(*) AS n, max(score) AS top FROM t")
            == "n,top\n3000,9\n\n(1 row(s))"
        )
        assert (  # booleans as SQL and JSON write them, not as Python's True/False
            await sql(client, json_handle, "SELECT score = 9 AS nine, count(*) AS n FROM t GROUP BY 1 ORDER BY 1")
            == "nine,n\nfalse,2700\ntrue,300\n\n(2 row(s))"
        )
        # the same tool still runs jq on JSON
        result = await client.call_tool(
            "query_large_output", {"handle": json_handle, "query": "map(select(.score == 9)) | length"}
        )
        assert text_of(result) == "300"


async def test_errors_name_the_table_and_its_columns(server: OffloadServer) -> None:
    async with Client(server) as client:
        handle = await offload(client, orders_csv(100))
        result = await client.call_tool("query_large_output", {"handle": handle, "query": "SELECT nope FROM t"})
        assert result.is_error
        message = text_of(result)
        assert 'Referenced column "nope" not found' in message
        assert f"The output {handle} is table t(id BIGINT, customer VARCHAR, status VARCHAR, amount DOUBLE)." in message
        assert "LINE 1" not in message and "Traceback" not in message


async def test_output_cap(services: Services) -> None:
    scope = outputs.SessionScope.new()
    handle = (await outputs.offload(services, scope, orders_csv(50_000))).handle
    out = await outputs.query(services, scope, handle, "SELECT * FROM t")
    assert out.truncated and len(out.result) <= services.settings.jq_max_output_chars
    assert 0 < out.results < 50_000


# -- SQL or jq --------------------------------------------------------------------------------------------------------

DETECT = [
    ("SELECT * FROM t", True),
    ("  select a from t", True),
    ("-- totals\nSELECT 1", True),
    ("/* x */ WITH a AS (SELECT 1) SELECT * FROM a", True),
    ("(SELECT 1)", True),
    ("FROM t LIMIT 3", True),
    ("DESCRIBE t", True),
    ("summarize t", True),
    ("VALUES (1), (2)", True),
    ("COPY t TO 'x.csv'", True),
    ("ATTACH 'x.db'", True),
    ("INSTALL httpfs", True),
    ("SET threads = 8", True),
    ("select(.a == 1)", False),
    ("select (.a)", False),
    ("SELECT (a + 1) FROM t", True),
    (".items | length", False),
    ("map(select(.ok))", False),
    ("values", False),
    ("with_entries(.value += 1)", False),
    ("fromjson", False),
    ('setpath(["a"]; 1)', False),
    ("tables", False),
    ('import "foo" as f; .', False),  # jq's module directive: jq refuses it (below), not DuckDB's parser
    ('import "foo" as $f; .', False),
    ('  import"foo" as f; .', False),
    ('include "foo"; .', False),
    ("IMPORT DATABASE 'dump'", True),
    ("import database 'dump'", True),
]


@pytest.mark.parametrize(("query", "expected"), DETECT)
def test_sql_is_told_from_jq(query: str, expected: bool) -> None:
    assert is_sql(query) is expected


JQ_FORMS = [
    'module {"name": "m"}; .',
    "def f: .; f",
    "reduce .[] as $x (0; . + $x)",
    "foreach .[] as $x (0; . + $x)",
    "if . then 1 else 2 end",
    "try error catch .",
    "label $out | 1",
    "$__loc__",
    "@csv",
    "..",
    "# a comment\n.",
]


def test_no_jq_builtin_or_keyword_form_is_taken_for_sql() -> None:
    """Every builtin jq itself lists (`builtins`, called with its arity) and every keyword form starts a jq program."""
    names = sorted(jq.compile("builtins").input_value(None).first())
    assert len(names) > 150
    programs = [n.split("/")[0] + (f"({'; '.join(['.'] * int(n.split('/')[1]))})" if n[-2:] != "/0" else "")
                for n in names]  # fmt: skip
    assert [p for p in [*programs, *JQ_FORMS] if is_sql(p)] == []


@pytest.mark.parametrize("mode", ERAS)
async def test_a_jq_import_gets_jqs_refusal_like_include(server: OffloadServer, mode: str) -> None:
    async with Client(server, mode=mode) as client:
        handle = await offload(client, json.dumps([{"a": i} for i in range(2000)]))
        for program, directive in (('import "foo" as f; .', "import"), ('include "foo"; .', "include")):
            result = await client.call_tool("query_large_output", {"handle": handle, "query": program})
            assert result.is_error
            assert f"jq `{directive}` directives are not allowed here" in text_of(result)
            assert "SQL" not in text_of(result)


# -- hostile SQL ------------------------------------------------------------------------------------------------------

# (query, a piece of the error message)
HOSTILE: list[tuple[str, str]] = [
    ("SELECT * FROM read_csv('/etc/passwd')", "not reachable from SQL"),
    ("SELECT * FROM read_text('/etc/hostname')", "not reachable from SQL"),
    ("SELECT * FROM read_blob('/proc/self/environ')", "not reachable from SQL"),
    ("SELECT * FROM glob('/*')", "not reachable from SQL"),
    ("SELECT * FROM '/etc/passwd'", "Table with name /etc/passwd does not exist"),  # not read as a file
    ("SELECT * FROM 'https://example.com/data.csv'", "not reachable from SQL"),
    ("SELECT * FROM sniff_csv('/etc/passwd')", "not reachable from SQL"),
    ("SELECT * FROM read_json('/etc/os-release')", "not reachable from SQL"),
    ("COPY t TO '{canary}'", "statements of type COPY are refused"),
    ("COPY (SELECT 1) TO '{canary}' (FORMAT csv)", "statements of type COPY are refused"),
    ("EXPORT DATABASE '{canary}'", "are refused"),
    ("ATTACH '{canary}' AS x", "statements of type ATTACH are refused"),
    ("INSTALL httpfs", "are refused"),
    ("LOAD httpfs", "are refused"),
    ("INSTALL httpfs FROM 'http://127.0.0.1:9/'", "are refused"),
    ("PRAGMA threads=8", "are refused"),
    ("SET enable_external_access = true", "are refused"),
    ("SET lock_configuration = false", "are refused"),
    ("RESET lock_configuration", "are refused"),
    ("CALL pragma_database_list()", "are refused"),
    ("DROP TABLE t", "statements of type DROP are refused"),
    ("DELETE FROM t", "statements of type DELETE are refused"),
    ("UPDATE t SET amount = 0", "statements of type UPDATE are refused"),
    ("CREATE TABLE u AS SELECT * FROM t", "statements of type CREATE are refused"),
    ("SELECT 1; DROP TABLE t", "exactly one SQL statement"),
    ("SELECT 1; COPY t TO '{canary}'", "exactly one SQL statement"),
    ("SELECT current_setting('enable_external_access') FROM query('DROP TABLE t')", "SQL error"),
    ("SELECT getenv('HOME')", "SQL error"),
    ("WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r", "limit and was stopped"),
    ("SELECT count(*) FROM t a, t b, t c, t d", "limit and was stopped"),
    ("SELECT length(string_agg(repeat('x', 1000), '')) FROM range(10000000)", "was stopped"),
    ("SELECT list(repeat('x', 10000)) FROM range(10000000)", "was stopped"),
]


@pytest.mark.parametrize(("query", "error"), HOSTILE, ids=[f"h{i}" for i in range(len(HOSTILE))])
async def test_hostile_sql_fails_cleanly(services: Services, query: str, error: str) -> None:
    scope = outputs.SessionScope.new()
    handle = (await outputs.offload(services, scope, orders_csv(2000))).handle
    with tempfile.TemporaryDirectory() as tmp:
        canary = Path(tmp) / "canary"
        started = time.perf_counter()
        with pytest.raises(QueryError, match=error) as caught:
            await outputs.query(services, scope, handle, query.format(canary=canary))
        assert time.perf_counter() - started < TIMEOUT_S + 8
        assert not list(Path(tmp).iterdir())  # noqa: ASYNC240  (a local directory listing)
        assert "root:" not in str(caught.value)  # nothing of /etc/passwd
    # the table is intact and the next query works
    out = await outputs.query(services, scope, handle, "SELECT count(*) AS n, sum(amount) AS s FROM t")
    assert out.result == "n,s\n2000,999500.0\n"


async def test_hostile_sql_through_mcp_is_an_error_result(server: OffloadServer) -> None:
    async with Client(server) as client:
        handle = await offload(client, orders_csv(10))
        result = await client.call_tool("query_large_output", {"handle": handle, "query": "COPY t TO '/tmp/x'"})
        assert result.is_error and "COPY are refused" in text_of(result) and "Traceback" not in text_of(result)


# -- scoping and backends ---------------------------------------------------------------------------------------------


async def test_other_sessions_cannot_query_an_output(server: OffloadServer) -> None:
    async with Client(server) as alice, Client(server) as bob:
        handle = await offload(alice, orders_csv(10))
        await sql(alice, handle, "SELECT count(*) FROM t")  # loaded in the worker for alice
        result = await bob.call_tool("query_large_output", {"handle": handle, "query": "SELECT * FROM t"})
        assert result.is_error and "cust" not in text_of(result)


async def test_blob_outputs_are_refused(services: Services) -> None:
    scope = outputs.SessionScope.new()
    blob = await outputs.offload_bytes(services, scope, b"\x89PNG\r\n" + bytes(100), mime_type="image/png")
    with pytest.raises(QueryError, match="is blob"):
        await outputs.query(services, scope, blob.handle, "SELECT 1")


async def test_redis_outputs_are_queried_through_a_private_copy_that_is_removed(
    redis_offload_server: OffloadServer,
) -> None:
    before = set(Path(tempfile.gettempdir()).glob("mcp-offload-sql-*"))  # noqa: ASYNC240
    async with Client(redis_offload_server) as client:
        handle = await offload(client, orders_csv(40_000))  # > 1 MiB: a lazy, chunked output
        assert (
            await sql(client, handle, "SELECT count(*) AS n FROM t WHERE status = 'paid'") == "n\n13333\n\n(1 row(s))"
        )
    assert set(Path(tempfile.gettempdir()).glob("mcp-offload-sql-*")) == before  # noqa: ASYNC240
