"""The SQL a table preview names runs as shown, whatever the header calls the column: bare names where DuckDB takes
them (short calls), quoted otherwise (keywords, capitals, spaces, quotes), values as string literals DuckDB casts."""

from __future__ import annotations

import csv
import io

import duckdb
import pytest

from mcp_offload.core import outputs
from mcp_offload.core.services import Services
from mcp_offload.preview.calls import SQL_KEYWORDS, sql_identifier, sql_string


def _bare_name_fails(con: duckdb.DuckDBPyConnection, word: str) -> bool:
    """Whether `word`, written bare, fails to name the column called so (an error, or another value)."""
    try:
        query = f'SELECT {word} FROM (SELECT 12345 AS "{word}") AS x WHERE {word} = 12345 GROUP BY 1 ORDER BY {word}'
        return con.execute(query).fetchall() != [(12345,)]
    except duckdb.Error:
        return True


SPECIAL_NAMES = [
    "current_date",
    "current_timestamp",
    "localtime",
    "current_user",
    "user",
    "session_user",
    "current_schema",
    "rowid",
]


def test_the_keyword_list_is_the_installed_duckdbs() -> None:
    con = duckdb.connect()
    words = [w for (w,) in con.execute("SELECT keyword_name FROM duckdb_keywords()").fetchall()] + SPECIAL_NAMES
    failing = {w for w in words if _bare_name_fails(con, w)}
    assert failing <= SQL_KEYWORDS, sorted(failing - SQL_KEYWORDS)  # every word DuckDB refuses bare is quoted
    assert len(failing) >= len(SQL_KEYWORDS) - 5  # and the list does not quote much that needs no quotes


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("typed", "typed"),
        ("_rank2", "_rank2"),
        ("order", '"order"'),
        ("Status", '"Status"'),
        ("first name", '"first name"'),
        ('say "hi"', '"say ""hi"""'),
        ("2nd", '"2nd"'),
        ("été", '"été"'),
    ],
)
def test_identifiers(name: str, shown: str) -> None:
    assert sql_identifier(name) == shown


def test_string_literals() -> None:
    assert sql_string("it's") == "'it''s'" and sql_string("") == "''"


@pytest.mark.parametrize("column", ["state", "order", "Status", "first name", 'say "hi"', "group"])
@pytest.mark.parametrize("values", [("open", "closed", "it's"), ("true", "false", "false"), ("yes", "no", "no")])
async def test_every_sql_call_of_a_table_preview_runs_and_counts_right(
    services: Services, column: str, values: tuple[str, str, str]
) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["id", column, "note"])
    rows = [[n, values[n % 3], f"note {n} " + "word " * (n % 5)] for n in range(60)]
    writer.writerows(rows)
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, buffer.getvalue())
    assert out.shape["type"] == "table", out.preview
    queries = [c["query"] for c in out.shape["calls"] if c["tool"] == "query_large_output"]
    assert len(queries) == 2, out.preview
    selected, per_value = queries
    name = sql_identifier(column)
    assert name in selected and name in per_value
    got = list(csv.reader(io.StringIO((await outputs.query(services, scope, out.handle, selected)).result)))
    assert got[0] == ["id", column, "note"]
    value = next(v for v in values if f"= {sql_string(v)} " in selected)
    expected = [str(r[0]) for r in rows if r[1] == value][:10]
    assert [r[0] for r in got[1:]] == expected
    counts = list(csv.reader(io.StringIO((await outputs.query(services, scope, out.handle, per_value)).result)))
    assert sum(int(n) for _, n in counts[1:]) == 60 and len(counts) - 1 == len(set(values))


async def test_a_table_duckdb_cannot_read_gets_a_pattern_that_works(services: Services) -> None:
    """Lone surrogates (stored as given, not valid UTF-8): DuckDB refuses the file, so no SQL is named; the rows of
    a value are found with the field-skipping pattern instead."""
    rows = [f"{n},{['open', 'closed', 'x'][n % 3]},n{n}\n" for n in range(50)]
    text = "id,state,note\n" + "".join(rows) + "50,bad,bad \udc80\n"
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, text)
    assert out.shape["type"] == "table" and "query_large_output" not in out.preview
    (search,) = [c for c in out.shape["calls"] if c["tool"] == "search_large_output"]
    found = await outputs.search(services, scope, search["pattern"], handle=out.handle, max_results=100)
    value = next(v for v in ("open", "closed", "x") if f'"?{v}"?' in search["pattern"])
    assert found.total_matches == sum(1 for r in rows if r.split(",")[1] == value)


async def test_a_value_with_a_control_character_is_not_the_example(services: Services) -> None:
    values = ["ring\u200b"] * 30 + ["off"] * 15 + ["mid"] * 15  # the most common value would be picked otherwise
    text = "id,state\n" + "".join(f"{n},{v}\n" for n, v in enumerate(values))
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, text)
    selected = next(c["query"] for c in out.shape["calls"] if c["tool"] == "query_large_output")
    assert selected == "SELECT * FROM t WHERE state = 'off' LIMIT 10"
    assert (await outputs.query(services, scope, out.handle, selected)).results == 10
