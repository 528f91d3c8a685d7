"""Where the CPU work of storing a big output runs: worker processes, so the serving process keeps its GIL.

Encoding, the content index, kind detection (a whole-document JSON parse), the preview and the token count of a
4 MB output take tens to hundreds of milliseconds of CPU. In a thread of the serving process they hold the GIL
for most of it (a JSON parse holds it from start to end), and every other client of a shared server waits: one
agent's big tool result stalled another agent's small turn on the gateway by 340 ms. Here that work runs in
`ingest_workers` worker processes (`python -m mcp_offload.core.ingest_worker`, spoken to over pipes by a thread of
ours; not `multiprocessing`, whose spawn re-runs the caller's main script: a library user's script has no
`__main__` guard to expect). A big output's bytes (or a body to parse) go to the worker in an anonymous in-memory
file it maps (`_share`: one copy, made without the GIL; where the system has none, or a worker cannot map it,
through the pipe), and only the index, preview and metadata come back pickled.

Outputs under `POOL_MIN_CHARS` are prepared in a thread as before: their work is a few milliseconds, less than the
copies. The workers start lazily (`start()`, or at the first big output); until one has started (about a second),
big outputs are prepared in a thread, so no call waits for a process to start. Once workers run, a big output
waits for a free one rather than taking the GIL here. A worker that dies mid-call (killed, out of memory) is
replaced; that call is prepared in a thread instead, and the dead worker had stored nothing (the store is written
by the serving process, after).

The workers also parse big JSON documents (`parse_json`, the gateway's request bodies of `PARSE_MIN_BYTES` or
more): `orjson.loads` of a 20 MB body holds the GIL for 50-100 ms, and the serving process would stall every other
client as long. The parsed value comes back in pieces (each item of a top-level list on its own) unpickled one at a
time in a thread, so no piece holds the GIL for more than a few milliseconds (a 4 MB string: ~2 ms); it is the value
`orjson.loads` gives here, equal in every key, order and string, so what is built from it is byte-identical.

A big output's passage index (`retrieve.ranked`: the background build after it is stored) is built in a worker too
(`passage_index`, called by the one background builder thread, so it takes one worker at a time): built in a thread,
its tokenizing holds this process's GIL for most of a second per 4 MB output.

The preview, kind and token count are the same functions with the same settings and tokenizer in either place,
so the result is byte-identical wherever it ran (the gateway's cache safety relies on it).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, Any

import anyio

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from mcp_offload.core import ingest_wire
from mcp_offload.settings import Settings
from mcp_offload.store.content_index import Buffer

log = logging.getLogger(__name__)

POOL_MIN_CHARS = 256 * 1024  # smaller outputs take a few ms: a thread costs less than copying to a process
PARSE_MIN_BYTES = 512 * 1024  # smaller documents parse in a few ms: here costs less than the copies to a worker
PIPE_BYTES = 1 << 20  # the pipes' buffer, where the system allows it
SHARE_CHUNK = 1 << 26  # bytes written to a shared in-memory file at a time
START_TIMEOUT_S = 60.0  # a worker that has not loaded within this long is given up (its calls run in threads)


class WorkerDied(Exception):
    """The worker process went away mid-call (killed, out of memory)."""


class JsonInvalid(ValueError):
    """A document `IngestPool.parse_json` was given is not JSON; `reason` says why (orjson's message, as a clause);
    `document`: its bytes."""

    def __init__(self, reason: str, document: bytes) -> None:
        super().__init__(reason)
        self.reason = reason
        self.document = document


class _Worker:
    """One worker process and its pipes; used by one thread at a time."""

    def __init__(self, settings: Settings) -> None:
        package_root = str(Path(__file__).resolve().parents[2])  # this mcp_offload, whatever sys.path found it by
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mcp_offload.core.ingest_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            close_fds=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        for pipe in (self.process.stdin, self.process.stdout):
            _widen(pipe)
        self._in: IO[bytes] = self.process.stdin
        self._out: IO[bytes] = self.process.stdout
        self.loaded = False
        ingest_wire.send(self._in, pickle.dumps(settings))

    def wait_ready(self) -> None:
        """Block until the worker has loaded (it answers its settings with an empty frame)."""
        self._receive()
        self.loaded = True

    def send(self, *request: bytes | bytearray | memoryview) -> None:
        """Send one frame (its pieces) of a many-frame request."""
        try:
            ingest_wire.send(self._in, *request)
        except (OSError, ValueError) as exc:  # ValueError: the pipe was closed (the pool closing) first
            raise WorkerDied(str(exc)) from None

    def call(self, *request: bytes | bytearray | memoryview) -> bytes:
        """Send one request frame (its pieces) and receive the first frame of the answer."""
        self.send(*request)
        return self._receive()

    def receive(self) -> bytes:
        """The next frame of a many-frame answer."""
        return self._receive()

    def _receive(self) -> bytes:
        try:
            return ingest_wire.receive(self._out)
        except (OSError, EOFError, ValueError) as exc:  # ValueError: the pipe was closed (the pool closing) first
            raise WorkerDied(str(exc) or "end of its output") from None

    def stop(self, grace_s: float = 5.0) -> None:
        """Close its pipes (a worker ends at the end of its input) and wait for it; killed after `grace_s`."""
        self.close_pipes()
        self.wait_or_kill(grace_s)

    def close_pipes(self) -> None:
        """Close the pipes; a worker still loading is killed first. It would see its closed input only once loaded
        (a second or more on a busy machine) and holds nothing yet; and closing the output pipe waits for the
        thread blocked reading it (`wait_ready`), which only the worker's answer or its end releases."""
        if not self.loaded:
            with suppress(OSError):
                self.process.kill()
        for pipe in (self._in, self._out):
            with suppress(OSError):
                pipe.close()

    def wait_or_kill(self, grace_s: float) -> None:
        """Wait up to `grace_s` for it to end, then kill it."""
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class IngestPool:
    """`prepare(...)`: the prepared output (`ingest.Prepared`, from `ingest.prepare_text` in a worker process), or
    None when the caller should prepare it in a thread (small output, no workers configured, none started yet, or
    the worker died mid-call). It does not import `ingest` (which sits above the services that hold the pool)."""

    def __init__(self, settings: Settings, workers: int) -> None:
        self._settings = settings
        self._workers = max(0, workers)
        self._lock = threading.Lock()
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: set[_Worker] = set()
        self._live = 0  # workers started and not dead
        self._starting = 0
        self._closed = False
        self._maps = hasattr(os, "memfd_create")  # the workers map a big output's bytes, instead of reading a copy

    @property
    def workers(self) -> int:
        return self._workers

    @property
    def ready(self) -> bool:
        """Whether at least one worker has started (big outputs then go to the workers)."""
        return self._live > 0

    def start(self) -> None:
        """Start the missing workers in the background (idempotent; returns at once)."""
        with self._lock:
            missing = 0 if self._closed else self._workers - self._live - self._starting
            self._starting += max(0, missing)
        for _ in range(missing):
            threading.Thread(target=self._start_one, name="ingest-worker-start", daemon=True).start()

    def _start_one(self) -> None:
        worker: _Worker | None = None
        try:
            worker = _Worker(self._settings)
            with self._lock:  # from now on `aclose` stops it too, loaded or not (no process outlives the pool)
                closed = self._closed
                if not closed:
                    self._all.add(worker)
            if closed:
                worker.stop(grace_s=0)
            else:
                worker.wait_ready()
        except (OSError, WorkerDied) as exc:
            with self._lock:
                self._starting -= 1
                closed = self._closed
                if worker is not None:
                    self._all.discard(worker)
            if not closed:
                log.warning("an ingest worker process did not start (%s): big outputs are prepared in threads", exc)
            if worker is not None:
                worker.stop(grace_s=0)
            return
        with self._lock:
            self._starting -= 1
            closed = self._closed
            if not closed:
                self._live += 1
        if not closed:
            self._idle.put(worker)

    def takes(self, chars: int) -> bool:
        """Whether an output of `chars` characters goes to the workers (then its bytes are for `prepare`): workers
        configured, one started (this starts them when none is), and the output big enough to be worth the copy."""
        if not self._workers or chars < POOL_MIN_CHARS:
            return False
        self.start()
        return self.ready

    async def prepare(
        self, data: bytes, notes: tuple[str, ...], name: str | None, source: str | None, handle: str | None
    ) -> object | None:
        """The output whose encoding is `data` (and its `notes`: `ingest.encode_output`), prepared in a worker: the
        bytes go as they are, in an in-memory file the worker maps (`_share`; else through its pipe), the worker
        decodes them, and they come back as `data` (only the rest is pickled back)."""
        if not self.ready:
            return None
        return await anyio.to_thread.run_sync(self._call, (notes, name, source, handle), data, abandon_on_cancel=True)

    def _call(self, facts: tuple[object, ...], data: bytes) -> object | None:
        worker = self._free_worker()
        if worker is None:
            return None
        shared = _share(data) if self._maps else None
        try:
            where = None if shared is None else _where(shared, len(data))
            worker.send(ingest_wire.PREPARE, pickle.dumps((*facts, where), protocol=pickle.HIGHEST_PROTOCOL))
            reply = worker.call(data) if where is None else worker.receive()
            ok, value = pickle.loads(reply)
            if ok is None:  # it could not map them
                self._not_mapped(value)
                ok, value = pickle.loads(worker.call(data))
        except WorkerDied as exc:
            self._died(worker, exc, "this output is prepared in a thread")
            return None
        finally:
            if shared is not None:
                os.close(shared)
        self._idle.put(worker)
        if not ok:
            raise value
        prepared: object = dataclasses.replace(value, data=data)
        return prepared

    async def parse_json(self, pieces: Sequence[bytes]) -> tuple[object, bytes] | None:
        """The JSON document `pieces` make, parsed as `orjson.loads` parses it, in a worker process: `(value,
        document)`, the document's bytes joined there; None when the caller should join and parse it itself (under
        `PARSE_MIN_BYTES`, no workers configured or started yet, or the worker died mid-call). Raises `JsonInvalid`
        (with the document's bytes) when it is not JSON."""
        if not self._workers or sum(len(piece) for piece in pieces) < PARSE_MIN_BYTES:
            return None
        self.start()
        if not self.ready:
            return None
        return await anyio.to_thread.run_sync(self._parse, pieces, abandon_on_cancel=True)

    def _parse(self, pieces: Sequence[bytes]) -> tuple[object, bytes] | None:
        worker = self._free_worker()
        if worker is None:
            return None
        size = sum(len(piece) for piece in pieces)
        shared = _share(*pieces) if self._maps else None
        try:  # every frame is read, whatever the answer, so the next call starts at a frame boundary
            ok, layout, mapped = self._parse_request(worker, pieces, shared, size)
            if ok:
                value = pickle.loads(worker.receive()) if layout is None else _object(worker, layout)
            # joined without this process's GIL: read back from the file it wrote, or from the worker's pipe
            document = _read_back(shared, size) if mapped and shared is not None else worker.receive()
        except WorkerDied as exc:
            self._died(worker, exc, "this document is parsed here")
            return None
        finally:
            if shared is not None:
                os.close(shared)
        self._idle.put(worker)
        if not ok:
            raise JsonInvalid(str(layout), document)
        return value, document

    def _parse_request(
        self, worker: _Worker, pieces: Sequence[bytes], shared: int | None, size: int
    ) -> tuple[bool, Any, bool]:
        """Ask `worker` to parse the document (mapped from `shared` when there is one, else sent through its pipe):
        `(ok, layout or reason, whether it was mapped)`."""
        if shared is not None:
            ok, layout = pickle.loads(worker.call(ingest_wire.PARSE_MAPPED, pickle.dumps(_where(shared, size))))
            if ok is not None:
                return ok, layout, True
            self._not_mapped(layout)
        ok, layout = pickle.loads(worker.call(ingest_wire.PARSE, *pieces))
        return ok, layout, False

    def _not_mapped(self, reason: object) -> None:
        """A worker could not map bytes this process shared: they go through the pipes, now and from now on."""
        self._maps = False
        log.info("an ingest worker could not map an output's bytes (%s); they are sent through its pipe", reason)

    def passage_index(self, data: Buffer, key: tuple[str, float, int]) -> bytes | None:
        """The passage index file (`index_file.dump_index`) of the output `key` names, built from `data` in a worker;
        None when it should be built here (no worker started, it died, or the build failed there: logged). Blocking:
        for the background builder's thread."""
        if not self._workers or not self.ready:
            return None
        worker = self._free_worker()
        if worker is None:
            return None
        pickled = pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            ok, reason = pickle.loads(
                worker.call(ingest_wire.PASSAGES, len(pickled).to_bytes(8, "big"), pickled, memoryview(data))
            )
            payload = worker.receive() if ok else None
        except WorkerDied as exc:
            self._died(worker, exc, "this passage index is built in a thread")
            return None
        self._idle.put(worker)
        if payload is None:
            log.warning("an ingest worker could not build a passage index (%s); it is built in a thread", reason)
        return payload

    def _free_worker(self) -> _Worker | None:
        """An idle worker, waited for: the work does not fall back onto this process's GIL while any run (None:
        every worker died meanwhile)."""
        while True:
            try:
                return self._idle.get(timeout=0.5)
            except queue.Empty:
                if not self.ready:
                    return None

    def _died(self, worker: _Worker, exc: WorkerDied, instead: str) -> None:
        with self._lock:
            closed = self._closed
            if not closed:  # closing counted it already
                self._live -= 1
                self._all.discard(worker)
        if not closed:  # else the pool closed its pipes under a call: nothing died, and nothing restarts
            log.warning("an ingest worker process died (%s); %s, it restarts", exc, instead)
        worker.stop()
        self.start()

    async def aclose(self) -> None:
        """Stop every worker, the ones still loading included (a loading worker ends when it finds its pipes closed)."""
        with self._lock:
            self._closed = True
            workers, self._all = list(self._all), set()
            self._live = 0
        if workers:
            await anyio.to_thread.run_sync(_stop_all, workers)


def _share(*pieces: bytes) -> int | None:
    """An anonymous in-memory file (memfd) holding the pieces' bytes, one after the other, for a worker to map: one
    copy in the kernel (~50 ms for 100 MB, without the GIL) instead of the pipe's two (~130-240 ms, the worker reading
    as this process writes). None when the system has none or it cannot hold them (its pages count as this process's
    memory until closed)."""
    try:
        fd = os.memfd_create("mcp-offload-output", os.MFD_CLOEXEC)
    except OSError:
        return None
    try:
        for piece in pieces:
            view, written = memoryview(piece), 0
            while written < len(view):
                written += os.write(fd, view[written : written + SHARE_CHUNK])
    except OSError:
        os.close(fd)
        return None
    return fd


def _where(fd: int, size: int) -> tuple[str, int, tuple[int, int]]:
    """Where a worker finds the shared file `fd`: its `/proc` path, its size and its identity (device, inode), which
    the worker checks, so that a `/proc` of another PID namespace never has it map some other process's file."""
    stat = os.fstat(fd)
    return f"/proc/{os.getpid()}/fd/{fd}", size, (stat.st_dev, stat.st_ino)


def _read_back(fd: int, size: int) -> bytes:
    """The `size` bytes `_share` wrote to `fd`, in one piece (the read releases the GIL; joining pieces would not)."""
    parts = [os.pread(fd, size, 0)]  # a memfd reads whole at once; the loop is for a system where it would not
    done = len(parts[0])
    while done < size and parts[-1]:
        parts.append(os.pread(fd, size - done, done))
        done += len(parts[-1])
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _widen(pipe: IO[bytes]) -> None:
    """A 1 MiB pipe buffer instead of 64 KiB where the system allows it (Linux): a big frame then takes 16 times
    fewer reads and writes, each of which releases and takes back the GIL."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is not None:
        with suppress(OSError):
            fcntl.fcntl(pipe.fileno(), set_size, PIPE_BYTES)


def _object(worker: _Worker, layout: list[tuple[str, int]]) -> dict[str, object]:
    """A parsed object from its pieces (`ingest_worker`'s layout): one frame per value, or per item of a list."""
    value: dict[str, object] = {}
    for key, count in layout:
        if count < 0:
            value[key] = pickle.loads(worker.receive())
        else:
            value[key] = [pickle.loads(worker.receive()) for _ in range(count)]
    return value


def _stop_all(workers: list[_Worker], grace_s: float = 5.0) -> None:
    """Stop `workers` together: all their pipes closed first, then one `grace_s` for them all (not one each)."""
    for worker in workers:
        worker.close_pipes()
    deadline = time.monotonic() + grace_s
    for worker in workers:
        worker.wait_or_kill(max(0.0, deadline - time.monotonic()))
