"""The SQL worker: loads a stored output into a private in-memory DuckDB database as table `t`, then locks that
database down and runs one read-only statement per request.

Per output (keyed by the server: handle + size + creation time) a database is created with `threads`,
`memory_limit`, no extension autoload/autoinstall, no unsigned extensions and no temp directory (no spilling),
the output is read into `t` (CSV/TSV sniffed by DuckDB's reader, JSON Lines and JSON with its JSON reader), and then
`enable_external_access=false` (no file, network, extension or replacement-scan access from SQL: COPY, ATTACH,
read_csv('/etc/passwd'), INSTALL/LOAD all fail) and `lock_configuration=true` (no SET/PRAGMA of any setting) are
set. A request's statement must be exactly one SELECT-type statement (SELECT, WITH, FROM, DESCRIBE, SUMMARIZE,
PIVOT, VALUES, SHOW); it runs in a transaction that is rolled back afterwards. A timer thread interrupts it at the
deadline (the server also kills the process a little later if it does not answer). Rows are written as CSV with a
header, cut at `max_chars`.

Wire: length-prefixed (4-byte big-endian) JSON frames on stdin/stdout. With no request for `idle_s` (argument 4)
the worker exits.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import resource
import select
import signal
import struct
import sys
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

import duckdb

FRAME = struct.Struct(">I")
MAX_FRAME = 64 * 1024 * 1024
ALLOWED = {"SELECT", "EXPLAIN"}  # statement types a request may run (DESCRIBE/SUMMARIZE/SHOW/PIVOT are SELECTs)


def read_frame(stream: Any) -> dict[str, Any] | None:
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (size,) = FRAME.unpack(head)
    if size > MAX_FRAME:
        return None
    body = stream.read(size)
    if len(body) < size:
        return None
    value: dict[str, Any] = json.loads(body)
    return value


def write_frame(stream: Any, message: dict[str, Any]) -> None:
    body = json.dumps(message, ensure_ascii=False).encode("utf-8", "surrogatepass")
    stream.write(FRAME.pack(len(body)) + body)
    stream.flush()


class Databases:
    """Loaded outputs, newest last; the oldest are closed past `keep`."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.items: OrderedDict[str, duckdb.DuckDBPyConnection] = OrderedDict()

    def get(self, request: dict[str, Any]) -> duckdb.DuckDBPyConnection:
        key = str(request["key"])
        found = self.items.get(key)
        if found is not None:
            self.items.move_to_end(key)
            return found
        con = load(request)
        self.items[key] = con
        while len(self.items) > self.keep:
            _, old = self.items.popitem(last=False)
            old.close()
        return con


def load(request: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    config: dict[str, str | bool | int | float | list[str]] = {
        "threads": int(request["threads"]),
        "memory_limit": f"{int(request['memory_mb'])}MB",
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_unsigned_extensions": False,
        "allow_community_extensions": False,
        "temp_directory": "",
    }
    con = duckdb.connect(":memory:", config=config)
    try:
        path, kind = str(request["path"]), str(request["kind"])
        if kind == "jsonl":
            con.execute("CREATE TABLE t AS FROM read_json(?, format = 'newline_delimited')", [path])
        elif kind == "json":
            con.execute("CREATE TABLE t AS FROM read_json(?, format = 'auto')", [path])
        else:
            con.execute("CREATE TABLE t AS FROM read_csv(?, header = true)", [path])
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def warm_up() -> None:
    """Pay DuckDB's once-per-process costs before the first request is read: the first connection (~140 ms here)
    and the first CSV read. A worker the server starts ahead of the first query (runner.py `prestart`) is then
    ready for it; for one started by the query itself, the work is the same, only earlier.

    The sample CSV is an anonymous in-memory file where the OS has them (Linux's memfd), read through its /proc
    path: a worker is killed at shutdown, often while it warms up, and a file in the temp directory would be left
    behind each time."""
    try:
        with _sample_csv(b"a,b\nx,1\ny,2\n") as path:
            con = duckdb.connect(":memory:", config={"threads": 1, "autoload_known_extensions": False})
            try:
                con.execute("SELECT count(*) FROM read_csv(?, header = true)", [path]).fetchall()
            finally:
                con.close()
    except (OSError, duckdb.Error, MemoryError):  # no writable temp directory, say: the first request pays instead
        pass


@contextlib.contextmanager
def _sample_csv(data: bytes) -> Iterator[str]:
    memfd_create = getattr(os, "memfd_create", None)
    if memfd_create is not None and os.path.isdir("/proc/self/fd"):
        fd = memfd_create("sql-warm-up", os.MFD_CLOEXEC)
        try:
            os.write(fd, data)
            yield f"/proc/self/fd/{fd}"
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="sql-warm-up-") as directory:
        path = os.path.join(directory, "w.csv")
        with open(path, "wb") as file:
            file.write(data)
        yield path


def run(con: duckdb.DuckDBPyConnection, sql: str, deadline_s: float, max_chars: int) -> dict[str, Any]:
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        return {"ok": False, "error": "statements", "count": len(statements)}
    kind = statements[0].type.name
    if kind not in ALLOWED:
        return {"ok": False, "error": "not_select", "type": kind}
    timer = threading.Timer(deadline_s, con.interrupt)
    started = time.perf_counter()
    con.begin()
    timer.start()
    try:
        cursor = con.execute(sql)
        columns = [d[0] for d in cursor.description or []]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        rows = 0
        truncated = False
        while not truncated:
            batch = cursor.fetchmany(1024)
            if not batch:
                break
            for record in batch:
                if out.tell() > max_chars:
                    truncated = True
                    break
                writer.writerow([_cell(v) for v in record])
                rows += 1
        text = out.getvalue()
        if len(text) > max_chars:
            text = text[:max_chars]
            truncated = True
        return {
            "ok": True,
            "text": text,
            "rows": rows,
            "columns": columns,
            "truncated": truncated,
            "elapsed": time.perf_counter() - started,
        }
    except duckdb.InterruptException:
        return {"ok": False, "error": "timeout"}
    finally:
        timer.cancel()
        with contextlib.suppress(duckdb.Error):
            con.rollback()


def main(argv: list[str]) -> int:
    parent = int(argv[0])
    address_mb = int(argv[1])
    os.chdir(tempfile.mkdtemp(prefix="sql-worker-"))
    os.rmdir(os.getcwd())
    if address_mb > 0:
        resource.setrlimit(resource.RLIMIT_AS, (address_mb << 20, address_mb << 20))
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    warm_up()
    databases = Databases(keep=int(argv[2]))
    idle_s = float(argv[3]) if len(argv) > 3 else None
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    while True:
        # One request at a time: nothing is buffered past a frame, so the descriptor tells whether one is coming.
        if idle_s is not None and not select.select([stdin], [], [], idle_s)[0]:
            return 0  # idle: the server starts another worker for the next query
        request = read_frame(stdin)
        if request is None:
            return 0
        try:
            con = databases.get(request)
        except duckdb.Error as exc:
            write_frame(stdout, {"ok": False, "error": "load", "message": str(exc).split("\n")[0][:500]})
            continue
        except MemoryError:
            write_frame(stdout, {"ok": False, "error": "memory"})
            continue
        try:
            reply = run(con, str(request["sql"]), float(request["deadline_s"]), int(request["max_chars"]))
        except duckdb.OutOfMemoryException:
            reply = {"ok": False, "error": "memory"}
        except duckdb.Error as exc:
            reply = {"ok": False, "error": "sql", "message": _first_lines(str(exc))}
        except MemoryError:
            reply = {"ok": False, "error": "memory"}
        if not reply.get("ok"):
            reply["columns_of_t"] = columns_of(con)
        write_frame(stdout, reply)


def _cell(value: Any) -> Any:
    """A value as the CSV shows it: NULL empty, booleans as SQL and JSON write them (true, not Python's True),
    lists/structs/maps as JSON, everything else as DuckDB's Python value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=str)
    return value


def _first_lines(message: str) -> str:
    """DuckDB's message without its source excerpt ("LINE 1: ..." and the caret under it)."""
    kept = []
    for line in message.splitlines():
        if line.startswith("LINE "):
            break
        if line.strip():
            kept.append(line.strip())
    return " ".join(kept)[:1000]


def columns_of(con: duckdb.DuckDBPyConnection) -> list[list[str]]:
    try:
        return [
            [str(n), str(t)] for n, t in con.execute("SELECT column_name, column_type FROM (DESCRIBE t)").fetchall()
        ]
    except duckdb.Error:
        return []


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
