"""SQL over one stored output, in a DuckDB worker process (`worker/main.py`) the server can kill (`SqlRunner`).

One worker, one query at a time (DuckDB runs each query on `threads` threads inside it). The worker keeps the
last few outputs loaded (a later query on the same output skips the load), keyed by handle + size + creation time:
outputs never change once stored, and handles carry 130 random bits, so a key names one output of one scope, and
the caller's scope was checked when the store opened the output. The worker gets the output's file path (filesystem
backend) or a private temporary copy (Redis backend, deleted after loading).

The worker starts on the first query, or in the background when a tabular output is offloaded (`prestart`), and
exits after `idle_s` without a request (the runner replaces one idle for 90 % of that instead of sending to it).

Limits: `timeout_s` (the worker interrupts the query; the server kills the worker `_GRACE_S` later if it has not
answered), `memory_mb` (DuckDB's memory limit, no spilling to disk; the address space of the worker is capped
too), `threads`, and `max_output_chars` (CSV text, cut while fetching). Errors name the table and its columns.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.sql.detect import TABLE
from mcp_offload.store.base import StoredOutput

log = logging.getLogger(__name__)

_WORKER = Path(__file__).parent / "worker" / "main.py"
_FRAME = struct.Struct(">I")
_GRACE_S = 2.0
_MAX_REPLY = 64 * 1024 * 1024
TABULAR_KINDS = ("text", "json", "jsonl")
PRESTART_DELAY_S = 0.2
IDLE_S = 600.0  # a worker with no request for this long exits (its memory, ~65 MB resident, goes back)
_STALE = 0.9  # the runner replaces a worker idle for this share of IDLE_S rather than race its exit


@dataclass(frozen=True)
class SqlResult:
    text: str  # CSV with a header line
    rows: int
    columns: tuple[str, ...]
    truncated: bool
    elapsed_s: float


class SqlRunner:
    def __init__(
        self,
        *,
        timeout_s: float,
        memory_mb: int,
        threads: int,
        max_output_chars: int,
        max_query_chars: int,
        keep_loaded: int = 4,
        idle_s: float = IDLE_S,
    ) -> None:
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        self.threads = threads
        self.max_output_chars = max_output_chars
        self.max_query_chars = max_query_chars
        self.keep_loaded = keep_loaded
        self.idle_s = idle_s
        self._last_used = 0.0  # time.monotonic() of the worker's start or its last reply
        self._process: Process | None = None
        self._lock = anyio.Lock()
        self._closed = False
        self._prestarting: asyncio.Task[None] | None = None

    def prestart(self) -> bool:
        """Start the worker in the background, so that the first SQL query does not wait for a Python process to
        start and import and warm up DuckDB (~300 ms here, against ~10-50 ms for a query on a warm worker). The
        caller (ingest, for a tabular output) does not wait: a task of the running asyncio loop spawns the process
        `PRESTART_DELAY_S` later (the spawn holds the loop for ~3-10 ms: by then the offload's answer is on its
        way), under the lock a query takes, so a query arriving meanwhile starts the worker itself and the task
        does nothing. Returns False, doing nothing, when a worker runs or is being started, the runner is closed,
        or the loop is not asyncio's (then the first query starts it, as without this)."""
        if self._closed or self._prestarting is not None or self._alive():
            return False
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not in asyncio's loop (trio, a thread)
            return False
        self._prestarting = loop.create_task(self._prestart(), name="sql-worker-prestart")
        return True

    async def _prestart(self) -> None:
        try:
            await asyncio.sleep(PRESTART_DELAY_S)
            async with self._lock:
                if not self._closed and not self._alive():
                    await self._worker()
        except Exception:  # the first query starts it then, and reports what goes wrong
            log.warning("could not start the SQL worker ahead of the first query", exc_info=True)
        finally:
            self._prestarting = None

    def _alive(self) -> bool:
        return self._process is not None and self._process.returncode is None

    async def run(self, output: StoredOutput, sql: str) -> SqlResult:
        meta = output.meta
        if meta.kind not in TABULAR_KINDS:
            raise QueryError(f"SQL needs a text (CSV/TSV) or JSON output; {meta.handle} is {meta.kind}.")
        if len(sql) > self.max_query_chars:
            raise QueryError(f"the SQL query has {len(sql):,} characters; the limit is {self.max_query_chars:,}.")
        request: dict[str, Any] = {
            "key": f"{meta.handle}:{meta.size}:{meta.created!r}",
            "kind": meta.kind,
            "sql": sql,
            "deadline_s": self.timeout_s,
            "max_chars": self.max_output_chars,
            "threads": self.threads,
            "memory_mb": self.memory_mb,
        }
        async with self._lock:
            copy: Path | None = None
            try:
                if output.path is not None:
                    request["path"] = str(output.path)
                else:
                    copy = await anyio.to_thread.run_sync(_private_copy, output)
                    request["path"] = str(copy)
                reply = await self._ask(request)
            finally:
                if copy is not None:
                    with contextlib.suppress(OSError):
                        copy.unlink()
                        copy.parent.rmdir()
        return _result(reply, meta.handle, self)

    async def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        process = await self._worker()
        assert process.stdin is not None and process.stdout is not None
        body = json.dumps(request).encode()
        try:
            with anyio.fail_after(self.timeout_s + _GRACE_S + _load_allowance(request)):
                await process.stdin.send(_FRAME.pack(len(body)) + body)
                head = await _receive_exact(process, _FRAME.size)
                (size,) = _FRAME.unpack(head)
                if size > _MAX_REPLY:
                    raise _WorkerGone("reply too large")
                reply: dict[str, Any] = json.loads(await _receive_exact(process, size))
                self._last_used = time.monotonic()
                return reply
        except TimeoutError:
            await self._discard()
            return {"ok": False, "error": "timeout"}
        except (_WorkerGone, anyio.BrokenResourceError, anyio.EndOfStream, anyio.ClosedResourceError, OSError):
            code = await self._discard()
            log.warning("the SQL worker died (exit status %s)", code)
            return {"ok": False, "error": "memory" if code in (-9, 137, -6, 134) else "crashed"}

    async def _worker(self) -> Process:
        process = self._process
        fresh = time.monotonic() - self._last_used < self.idle_s * _STALE
        if process is not None and process.returncode is None and fresh:
            return process
        if process is not None:  # died (killed, out of memory, idle) or about to exit idle: replace it
            await self._discard()
        address_mb = self.memory_mb * 2 + 2048  # DuckDB's own limit is memory_mb; this only stops a runaway
        command = [sys.executable, "-I", str(_WORKER), str(os.getpid()), str(address_mb), str(self.keep_loaded)]
        command.append(f"{self.idle_s:g}")
        env = {"PATH": os.defpath, "LANG": "C.UTF-8"}
        self._process = await anyio.open_process(command, env=env, stderr=None)
        self._last_used = time.monotonic()
        return self._process

    async def _discard(self) -> int | None:
        process, self._process = self._process, None
        if process is None:
            return None
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        with anyio.move_on_after(5):
            await process.wait()
        with contextlib.suppress(Exception):
            await process.aclose()
        return process.returncode

    async def aclose(self) -> None:
        self._closed = True  # a start still queued for the lock does nothing now
        if self._prestarting is not None:
            self._prestarting.cancel()
        async with self._lock:
            await self._discard()


class _WorkerGone(Exception):
    pass


def _load_allowance(request: dict[str, Any]) -> float:
    """Extra seconds a first query gets for loading the output (~50 MB/s at worst here) and starting DuckDB."""
    path = request.get("path")
    size = os.stat(path).st_size if path and os.path.exists(path) else 0
    return 5.0 + size / 50e6


async def _receive_exact(process: Process, size: int) -> bytes:
    assert process.stdout is not None
    chunks = bytearray()
    while len(chunks) < size:
        chunk = await process.stdout.receive(size - len(chunks))
        chunks += chunk
    return bytes(chunks)


def _private_copy(output: StoredOutput) -> Path:
    directory = Path(tempfile.mkdtemp(prefix="mcp-offload-sql-"))
    path = directory / "output"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as file:
        for chunk in output.iter_chunks():
            file.write(chunk)
    return path


def _columns(reply: dict[str, Any]) -> str:
    columns = reply.get("columns_of_t") or []
    if not columns:
        return f"table {TABLE}"
    shown = ", ".join(f"{name} {kind}" for name, kind in columns[:30])
    more = f", … ({len(columns) - 30} more)" if len(columns) > 30 else ""
    return f"table {TABLE}({shown}{more})"


def _result(reply: dict[str, Any], handle: str, runner: SqlRunner) -> SqlResult:
    if reply.get("ok"):
        return SqlResult(
            text=str(reply["text"]),
            rows=int(reply["rows"]),
            columns=tuple(reply["columns"]),
            truncated=bool(reply["truncated"]),
            elapsed_s=float(reply["elapsed"]),
        )
    error = reply.get("error")
    where = f"The output {handle} is {_columns(reply)}."
    if error == "timeout":
        raise QueryError(
            f"the SQL query ran past the {runner.timeout_s:g} s limit and was stopped: filter earlier (WHERE), add "
            f"a LIMIT, avoid cross joins and unbounded recursive CTEs. {where}"
        )
    if error == "memory":
        raise QueryError(
            f"the SQL query ran out of its {runner.memory_mb:,} MB memory limit and was stopped: aggregate or filter "
            f"first, select fewer columns. {where}"
        )
    if error == "statements":
        raise QueryError(f"send exactly one SQL statement (this has {reply.get('count', 0)}). {where}")
    if error == "not_select":
        raise QueryError(
            f"only a read-only query runs here (SELECT, WITH, FROM, DESCRIBE, SUMMARIZE, PIVOT); statements of type "
            f"{reply.get('type', '?')} are refused. {where}"
        )
    if error == "load":
        raise QueryError(
            f"{handle} could not be read as a table ({reply.get('message', '')}). SQL works on CSV/TSV, JSON Lines "
            "and JSON arrays of records; query other JSON with jq."
        )
    if error == "sql":
        message = str(reply.get("message", "")).replace("Permission Error: ", "")
        if "file system operations are disabled" in message or "disabled through configuration" in message:
            message = "files, network and extensions are not reachable from SQL here; only table t is"
        if "the configuration has been locked" in message:
            message = "settings cannot be changed here (SET/PRAGMA/RESET)"
        raise QueryError(f"SQL error: {message.rstrip('.')}. {where}")
    raise QueryError(f"the SQL worker stopped unexpectedly; try again. {where}")
