"""The DuckDB worker is started in the background when a tabular output is offloaded (not by other outputs), one per
process, after the offload has answered, with DuckDB imported and warmed up before the first query arrives; the
first query uses it; closing the services first starts nothing. An idle worker exits; one about to is replaced."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import anyio
import duckdb
import pytest

from mcp_offload.core import outputs
from mcp_offload.core.ingest import is_tabular
from mcp_offload.core.services import Services, sql_runner
from mcp_offload.retrieve.sql.runner import PRESTART_DELAY_S
from mcp_offload.retrieve.sql.worker import main as worker
from support import alive, cmdline, descendants

WORKER = "retrieve/sql/worker/main.py"


def _workers() -> list[int]:
    """The pids of this process's live SQL worker children."""
    return [pid for pid in alive(descendants(os.getpid())) if WORKER in cmdline(pid)]


def _has_duckdb_loaded(pid: int) -> bool:
    try:
        return "duckdb" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


async def _wait_for(condition: object, timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        await anyio.sleep(0.05)
    return False


CSV = "id,status,amount\n" + "".join(f"{i},{['open', 'paid'][i % 2]},{i * 1.5}\n" for i in range(2000))
RECORDS = [{"id": i, "status": ["open", "paid"][i % 2]} for i in range(500)]


@pytest.mark.parametrize(
    ("content", "rows"),
    [
        (CSV, 2000),
        (CSV.replace(",", "\t"), 2000),
        ("\n".join(json.dumps(r) for r in RECORDS), 500),
        (json.dumps(RECORDS), 500),
        (json.dumps({"items": RECORDS}), None),  # an object: SQL would not read it as rows
        (json.dumps(list(range(3000))), None),
        ("".join(f"2026-01-01 12:00:{i % 60:02d} INFO request {i} served\n" for i in range(2000)), None),
    ],
    ids=["csv", "tsv", "jsonl", "json records", "json object", "json numbers", "log"],
)
async def test_only_tabular_outputs_start_the_worker(services: Services, content: str, rows: int | None) -> None:
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, content)
    assert is_tabular(out.kind, out.shape) is (rows is not None)
    assert _workers() == []  # never inside the offload call: a moment later, in the background
    started = await _wait_for(lambda: len(_workers()) == 1, timeout_s=10.0 if rows else PRESTART_DELAY_S + 1.5)
    assert started is (rows is not None)
    if rows is not None:
        (pid,) = _workers()
        assert await _wait_for(lambda: _has_duckdb_loaded(pid))  # imported before any query
        got = await outputs.query(services, scope, out.handle, "SELECT count(*) AS n FROM t")
        assert got.result == f"n\n{rows}\n"
        assert _workers() == [pid]  # the query used the worker started ahead of it


async def test_one_worker_however_many_tables_and_a_query_racing_the_start(services: Services) -> None:
    scope = outputs.SessionScope.new()
    handles = [(await outputs.offload(services, scope, CSV + f"{n},x,0\n")).handle for n in range(5)]
    got = await outputs.query(services, scope, handles[-1], "SELECT count(*) AS n FROM t")  # before the delay is over
    assert got.result == "n\n2001\n"
    (pid,) = _workers()
    await anyio.sleep(PRESTART_DELAY_S + 0.5)  # the background start found the query's worker: nothing more
    for n, handle in enumerate(handles):
        assert (
            await outputs.query(services, scope, handle, "SELECT count(*) AS n FROM t WHERE id = " + str(n))
        ).result == ("n\n2\n")
    assert _workers() == [pid]


async def test_closing_before_the_start_starts_nothing(services: Services) -> None:
    await outputs.offload(services, outputs.SessionScope.new(), CSV)
    await services.sql.aclose()
    await anyio.sleep(PRESTART_DELAY_S + 0.5)
    assert _workers() == []
    assert services.sql.prestart() is False  # closed: stays so


async def _with_runner(services: Services, idle_s: float) -> None:
    await services.sql.aclose()
    services.sql = sql_runner(services.settings, idle_s=idle_s)


async def test_an_idle_worker_exits_and_the_next_query_starts_another(services: Services) -> None:
    await _with_runner(services, idle_s=1.5)
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, CSV)
    assert await _wait_for(lambda: len(_workers()) == 1)  # pre-started
    assert await _wait_for(lambda: _workers() == [], timeout_s=8.0)  # never queried: gone after 1.5 s idle
    # the next table offloaded would start one again (once the loop has reaped the exited worker)
    assert await _wait_for(services.sql.prestart, timeout_s=5.0)
    got = await outputs.query(services, scope, out.handle, "SELECT count(*) AS n FROM t")
    assert got.result == "n\n2000\n" and len(_workers()) == 1


async def test_a_worker_about_to_exit_idle_is_replaced_not_sent_to(services: Services) -> None:
    await _with_runner(services, idle_s=4.0)
    scope = outputs.SessionScope.new()
    out = await outputs.offload(services, scope, CSV)
    assert (await outputs.query(services, scope, out.handle, "SELECT 1 AS one")).result == "one\n1\n"
    (first,) = _workers()
    await anyio.sleep(3.75)  # past 90 % of the idle time, before the worker's own exit
    assert (await outputs.query(services, scope, out.handle, "SELECT count(*) AS n FROM t")).result == "n\n2000\n"
    (second,) = _workers()
    assert second != first


def test_warm_up_reads_its_sample_without_a_file_a_kill_could_leave_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker is killed at shutdown, often while it warms up: no file of the warm-up may exist in the temp
    directory while DuckDB works (each killed worker used to leave a `sql-warm-up-*` directory in /tmp)."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    seen: list[list[str]] = []
    read: list[object] = []
    real_connect = duckdb.connect

    def connect(*args: object, **kwargs: object) -> duckdb.DuckDBPyConnection:
        seen.append(os.listdir(temp))  # what a kill at this moment would leave behind
        con = real_connect(*args, **kwargs)  # type: ignore[arg-type]
        return _Recording(con, read)  # type: ignore[return-value]

    monkeypatch.setattr(duckdb, "connect", connect)  # the module the worker calls it on
    worker.warm_up()
    assert seen == [[]] and read == [[(2,)]]  # DuckDB read the sample's two rows, and no file was there
    assert os.listdir(temp) == []


class _Recording:
    def __init__(self, con: duckdb.DuckDBPyConnection, read: list[object]) -> None:
        self._con, self._read = con, read

    def execute(self, sql: str, parameters: list[object]) -> _Recording:
        self._cursor = self._con.execute(sql, parameters)
        return self

    def fetchall(self) -> list[tuple[object, ...]]:
        rows = self._cursor.fetchall()
        self._read.append(rows)
        return rows

    def close(self) -> None:
        self._con.close()
