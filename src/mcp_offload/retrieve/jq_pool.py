"""jq over a stored JSON / JSON Lines output, in a pool of bounded worker processes (`JqRunner`).

A jq program is untrusted code: it can loop forever, print forever, allocate until the machine swaps, or try to
read the server's environment and files. Each query therefore runs in a warm worker process (`jq_worker`) that
we can kill at a deadline, whose memory is capped, which has an empty environment and no file access; output is
cut at a character cap while iterating, so an endless generator costs nothing. Workers are awaited without
blocking the event loop, so other calls stay responsive while a runaway program is being stopped; a killed worker
is replaced lazily by the next query.

Parsing the input is most of a query's cost, and models query one output several times in a row. Each worker keeps
the parsed values of its last few inputs (see `jq_worker`), keyed by handle + size + creation time + kind (outputs
never change once stored, and handles carry 130 random bits, so a key never names two outputs, whatever their
scope). The pool sends a query to an idle worker that holds its input, and sends no input at all then; the worker
lists its cache in every reply, so the pool's picture is exact.

Results look exactly like the jq CLI's: pretty (2-space indent) by default, `compact` like `jq -c`, `raw` like
`jq -r`, one result per line/block joined with "\\n" (no trailing newline). The numbers are formatted by jq itself.

The program and the input are vetted first (`jq_program`). This module holds the pool and its queueing: at most
`workers` queries at once (the rest wait on a semaphore), which idle worker takes a query (`_pick`), how the input
travels (the stored file's descriptor, else its bytes), the deadline, and the one retry without other cached
inputs after running out of memory next to them. Invariant: a worker goes back to the idle list only after a
complete reply; any other ending (deadline, crash, cancellation, shutdown) kills and reaps it. One worker process's
life (start, liveness, kill, death reasons) is `jq_process`; the non-blocking side of the wire is `jq_wire`; what a
reply means (a `JqResult` or the `QueryError` a model reads) is `jq_reply`.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from typing import Any

import anyio

from mcp_offload.errors import QueryError
from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from mcp_offload.retrieve.jq_process import JqWorker, libjq_path, worker_command
from mcp_offload.retrieve.jq_program import check_kind, check_program
from mcp_offload.retrieve.jq_reply import OUT_OF_MEMORY, JqResult, result_of
from mcp_offload.retrieve.jq_wire import WorkerGone
from mcp_offload.retrieve.jq_worker.protocol import MAX_FRAME
from mcp_offload.store.base import OutputMeta, StoredOutput

__all__ = ["JqResult", "JqRunner", "worker_command"]

_OPEN_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK  # a planted FIFO must not block us
_MIN_RETRY_S = 0.1  # the least time a retry without cached inputs gets (after running out of memory next to them)
_MIB = 1024 * 1024


class _Deadline(QueryError):
    """The program ran past the deadline."""


class _CrowdedOut(Exception):
    """The query ran out of memory on a worker that also held other cached inputs: retry without them."""

    def __init__(self, error: QueryError) -> None:
        super().__init__(str(error))
        self.error = error  # what to report if the retry cannot finish in time either


class JqRunner:
    """Runs jq programs in a small pool of warm, sandboxed worker processes that cache parsed inputs.

    Cache bounds are per worker: `cache_inputs` outputs, `cache_input_mb` MB of their JSON text, and
    `cache_memory_mb` MB of parsed values (default: half of `memory_mb`; parsed JSON takes 5-13x its text). The
    cache counts against `memory_mb`. `cache_inputs=0` turns caching off.
    """

    def __init__(
        self,
        *,
        workers: int = 2,
        timeout_s: float = 10.0,
        max_output_chars: int = 100_000,
        max_program_chars: int = 10_000,
        memory_mb: int = 2048,
        cache_inputs: int = 4,
        cache_input_mb: float = 256,
        cache_memory_mb: float | None = None,
        libjq: str | None = None,
    ) -> None:
        """`libjq`: a shared library exporting libjq's API to use instead of the one bundled in jq.py (e.g. the
        system's `libjq.so.1`, built with -O2 where jq.py's bundled build is not; that version's semantics and
        number formatting then apply)."""
        if workers < 1 or timeout_s <= 0 or max_output_chars < 0 or max_program_chars < 1 or memory_mb < 1:
            raise ValueError("invalid JqRunner limits")
        if cache_memory_mb is None:
            cache_memory_mb = memory_mb / 2
        if cache_inputs < 0 or cache_input_mb < 0 or not 0 <= cache_memory_mb <= memory_mb:
            raise ValueError("invalid JqRunner cache limits")
        self.workers = workers
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self.max_program_chars = max_program_chars
        self.memory_mb = memory_mb
        self.cache_inputs = cache_inputs
        self.cache_input_bytes = int(cache_input_mb * _MIB)
        self.cache_memory_bytes = int(cache_memory_mb * _MIB)
        self._idle: list[JqWorker] = []
        self._all: set[JqWorker] = set()
        self._slots: anyio.Semaphore | None = None
        self._libjq: str | None = libjq or None
        self._closed = False

    def cache_key(self, meta: OutputMeta, size: int) -> str | None:
        """The name of an output's parsed input in the workers; None when caching is off.

        Stored outputs never change and handles are globally unique (130 random bits, whatever the scope); the
        size and creation time are there in case either assumption is ever broken.
        """
        if self.cache_inputs < 1:
            return None
        return f"{meta.handle}:{size}:{meta.created!r}:{meta.kind}"

    async def run(self, output: StoredOutput, program: str, *, compact: bool = False, raw: bool = False) -> JqResult:
        started = time.perf_counter()
        check_kind(output)
        source = check_program(program, self.max_program_chars)
        if self._closed:
            raise QueryError("jq is shutting down on this server; try again later.")
        if self._slots is None:
            self._slots = anyio.Semaphore(self.workers)
        size = len(output.data)
        header = {
            "program": source,
            "compact": bool(compact),
            "raw": bool(raw),
            "max_chars": self.max_output_chars,
            "memory_bytes": self.memory_mb * _MIB,
            "size": size,
            "key": self.cache_key(output.meta, size),
            "kind": output.meta.kind,
            "cache_inputs": self.cache_inputs,
            "cache_input_bytes": self.cache_input_bytes,
            "cache_memory_bytes": self.cache_memory_bytes,
        }
        reply_limit = MAX_FRAME + 8 * self.max_output_chars  # JSON escapes at most 6 bytes per character
        async with self._slots:
            try:
                reply = await self._attempt(output, header, reply_limit, self.timeout_s)
            except _CrowdedOut as crowded:  # once more without the other cached inputs, in the time left
                left = max(self.timeout_s - (time.perf_counter() - started), _MIN_RETRY_S)
                try:
                    reply = await self._attempt(output, {**header, "clear_cache": True}, reply_limit, left)
                except _Deadline:
                    raise crowded.error from None
        return result_of(reply, output, time.perf_counter() - started)

    async def _attempt(
        self, output: StoredOutput, header: dict[str, Any], reply_limit: int, timeout_s: float
    ) -> dict[str, Any]:
        """One try on one worker. Raises QueryError, or `_CrowdedOut` when the query ran out of memory on a worker
        that also held other cached inputs (they count against the memory cap): the caller retries without them."""
        key, program = header["key"], header["program"]
        worker = await self._checkout(key, program)
        crowded = not header.get("clear_cache") and worker.cached_bytes(besides=key) > 0
        cached = worker.serves(key, program)
        fd: int | None = None
        payload: Any = b""
        finished = False
        try:
            if not cached:
                fd = self._open_stored_file(output, header["size"])
                # No file to map (Redis): the bytes go over the socket; a lazy view is fetched once, off the loop.
                payload = output.data if fd is not None else await anyio.to_thread.run_sync(output.contiguous)
            with anyio.fail_after(timeout_s):
                if cached:
                    reply = await worker.request({**header, "cached": True}, None, b"", reply_limit)
                    worker.note_cache(reply)
                    if reply.get("error") == "cache_miss":  # never expected: the worker lists its cache each time
                        fd = self._open_stored_file(output, header["size"])
                        payload = output.data if fd is not None else await anyio.to_thread.run_sync(output.contiguous)
                        cached = False
                if not cached:
                    reply = await worker.request(header, fd, payload, reply_limit)
                    worker.note_cache(reply)
            finished = True
        except TimeoutError:
            raise _Deadline(
                f"the jq program ran longer than {self.timeout_s:g} s and was stopped. Narrow it (select fields "
                "early, use limit(n; ...) or first(...)) and check for endless loops (repeat, recurse, while)."
            ) from None
        except WorkerGone:
            if self._closed:
                raise QueryError("jq is shutting down on this server; try again later.") from None
            reason = await worker.death_reason(self.memory_mb)
            error = QueryError(f"the jq program {reason} and was stopped. Narrow it or process less data.")
            if crowded and worker.proc.returncode == -signal.SIGABRT:
                raise _CrowdedOut(error) from None
            raise error from None
        except ValueError:  # an unreadable reply: the worker is broken
            raise QueryError("jq failed unexpectedly on this output; try again.") from None
        finally:
            if fd is not None:
                os.close(fd)
            if finished and not self._closed:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
                await worker.discard()
        if crowded and reply.get("error") == "memory":
            raise _CrowdedOut(QueryError(OUT_OF_MEMORY))
        return reply

    async def _checkout(self, key: str | None, program: str) -> JqWorker:
        while self._idle:
            worker = self._pick(key, program)
            self._idle.remove(worker)
            if worker.alive():
                return worker
            self._all.discard(worker)
            await worker.discard()
        if self._libjq is None:
            self._libjq = libjq_path()
        worker = await JqWorker.start(self._libjq)
        if self._closed:
            await worker.discard()
            raise QueryError("jq is shutting down on this server; try again later.")
        self._all.add(worker)
        return worker

    def _pick(self, key: str | None, program: str) -> JqWorker:
        """An idle worker that has this input parsed, else the one holding the least (hot inputs stay where they
        are); ties go to the most recently used, which keeps a lightly used pool on one warm worker."""
        recent_first = self._idle[::-1]
        for worker in recent_first:
            if worker.serves(key, program):
                return worker
        return min(recent_first, key=lambda worker: worker.cached_bytes())

    @staticmethod
    def _open_stored_file(output: StoredOutput, size: int) -> int | None:
        """A descriptor of the stored file for the worker to map, or None to send the bytes instead."""
        if output.path is None:
            return None
        try:
            fd = os.open(output.path, _OPEN_FLAGS)
        except OSError:
            return None
        try:
            info = os.fstat(fd)
        except OSError:
            os.close(fd)
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            os.close(fd)
            return None
        return fd

    async def aclose(self) -> None:
        """Kill every worker (idle or busy). Workers also die on their own if this process dies."""
        self._closed = True
        workers, self._idle, self._all = list(self._all), [], set()
        for worker in workers:
            worker.kill()
        for worker in workers:
            await worker.discard()
