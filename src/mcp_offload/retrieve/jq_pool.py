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

The program and the input are vetted first (`jq_program`); this module holds the pool, one worker process
(`_Worker`: start-up, the non-blocking side of the wire in `jq_worker.protocol`, death reasons) and how a worker is
started (`worker_command`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from mcp_offload.errors import QueryError
from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK
from mcp_offload.retrieve.jq_program import check_kind, check_program
from mcp_offload.retrieve.jq_worker.protocol import FRAME, MAX_FRAME, cache_serves, decode_frame, encode_frame
from mcp_offload.store.base import OutputMeta, StoredOutput

log = logging.getLogger(__name__)

# The worker imports its package as the top-level `jq_worker` from this directory, never as part of mcp_offload
# (whose imports would slow its start-up and reach past its sandbox): stdlib first on its path, then this directory.
_WORKER_HOME = Path(__file__).parent
_WORKER_BOOTSTRAP = (
    "import sys; sys.path.append(sys.argv[1]); from jq_worker.main import main; sys.exit(main(sys.argv[2:]))"
)
_PROCFS = Path("/proc/self/stat").exists()
_OPEN_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK  # a planted FIFO must not block us
_SOCKET_BUFFER = 4 * 1024 * 1024
_START_TIMEOUT_S = 30.0
_REAP_TIMEOUT_S = 5.0
_MIN_RETRY_S = 0.1  # the least time a retry without cached inputs gets (after running out of memory next to them)
_MIB = 1024 * 1024
_OUT_OF_MEMORY = "the jq program ran out of memory and was stopped. Narrow it or process less data."


@dataclass(frozen=True)
class JqResult:
    text: str
    results: int
    truncated: bool
    elapsed_s: float
    cached: bool = False  # the input was already parsed in the worker (no parse this time)


# -- one worker process --------------------------------------------------------------------------------------------
def worker_command(libjq: str, parent_pid: int, fd: int) -> list[str]:
    """The worker's command line: stdlib only (`-I -S`), the `jq_worker` package found in `_WORKER_HOME`."""
    return [sys.executable, "-I", "-S", "-c", _WORKER_BOOTSTRAP, str(_WORKER_HOME), libjq, str(parent_pid), str(fd)]


class _WorkerGone(Exception):
    """The worker closed its socket: it exited, crashed or was killed."""


class _Deadline(QueryError):
    """The program ran past the deadline."""


class _CrowdedOut(Exception):
    """The query ran out of memory on a worker that also held other cached inputs: retry without them."""

    def __init__(self, error: QueryError) -> None:
        super().__init__(str(error))
        self.error = error  # what to report if the retry cannot finish in time either


def _libjq_path() -> str:
    """jq.py's extension module, which carries (and exports) libjq; found without importing it here."""
    spec = importlib.util.find_spec("jq")
    if spec is None or not spec.origin:
        raise QueryError("jq is not available on this server (the `jq` Python package is not installed).")
    return spec.origin


async def _send_all(sock: socket.socket, data: bytes | memoryview) -> None:
    with memoryview(data) as whole, whole.cast("B") as view:  # released on exit: the store may close an mmap
        offset, size = 0, len(view)
        while offset < size:
            try:
                offset += sock.send(view[offset:])
            except BlockingIOError:
                await anyio.wait_writable(sock)
            except OSError as exc:
                raise _WorkerGone(str(exc)) from exc


async def _send_with_fd(sock: socket.socket, data: bytes, fd: int) -> None:
    """Send a frame with a descriptor attached (SCM_RIGHTS) to its first byte."""
    fds = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array("i", [fd]))]
    while True:
        try:
            sent = sock.sendmsg([data], fds)
            break
        except BlockingIOError:
            await anyio.wait_writable(sock)
        except OSError as exc:
            raise _WorkerGone(str(exc)) from exc
    await _send_all(sock, data[sent:])


async def _recv_exact(sock: socket.socket, size: int) -> bytes:
    parts: list[bytes] = []
    left = size
    while left:
        try:
            chunk = sock.recv(min(left, 1 << 20))
        except BlockingIOError:
            await anyio.wait_readable(sock)
            continue
        except OSError as exc:
            raise _WorkerGone(str(exc)) from exc
        if not chunk:
            raise _WorkerGone("end of stream")
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


async def _recv_frame(sock: socket.socket, limit: int = MAX_FRAME) -> dict[str, Any]:
    (length,) = FRAME.unpack(await _recv_exact(sock, FRAME.size))
    if length > limit:
        raise _WorkerGone("oversized frame")
    return decode_frame(await _recv_exact(sock, length))


class _Worker:
    def __init__(self, proc: subprocess.Popen[bytes], sock: socket.socket) -> None:
        self.proc = proc
        self.sock = sock
        self.landlock = False
        self.cache: dict[str, tuple[int, int]] = {}  # key -> (records, heap bytes), as the worker last listed it

    def note_cache(self, reply: dict[str, Any]) -> None:
        listing = reply.get("cache")
        if isinstance(listing, list):
            self.cache = {str(key): (int(records), int(cost)) for key, records, cost in listing}

    def serves(self, key: str | None, program: str) -> bool:
        """Whether this worker can answer `program` on input `key` from its cache."""
        cached = self.cache.get(key) if key is not None else None
        return cached is not None and cache_serves(program, cached[0])

    def cached_bytes(self, besides: str | None = None) -> int:
        return sum(cost for key, (_, cost) in self.cache.items() if key != besides)

    @classmethod
    async def start(cls, libjq: str) -> _Worker:
        """Spawn a worker. Called from the event-loop thread: PR_SET_PDEATHSIG follows the spawning thread."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        for sock, option in ((ours, socket.SO_SNDBUF), (theirs, socket.SO_RCVBUF)):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, option, _SOCKET_BUFFER)
        try:  # a plain Popen (vfork + exec, milliseconds) in this thread; the worker's start-up is awaited below
            proc = subprocess.Popen(  # noqa: ASYNC220
                worker_command(libjq, os.getpid(), theirs.fileno()),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # stdout is the MCP wire: a worker never writes to it
                stderr=subprocess.DEVNULL,  # `debug`/`stderr` output and crash messages go nowhere
                env={},
                cwd="/",
                pass_fds=(theirs.fileno(),),
                start_new_session=True,  # its own process group, killed as a whole
                close_fds=True,
            )
        except OSError as exc:
            ours.close()
            raise QueryError(f"jq could not be started on this server ({exc.strerror}).") from exc
        finally:
            theirs.close()
        ours.setblocking(False)
        worker = cls(proc, ours)
        try:
            with anyio.fail_after(_START_TIMEOUT_S):
                hello = await _recv_frame(ours)
        except (TimeoutError, _WorkerGone, ValueError) as exc:
            await worker.discard()
            raise QueryError("jq could not be started on this server (its worker did not come up).") from exc
        except BaseException:
            await worker.discard()
            raise
        if not hello.get("ready"):
            await worker.discard()
            log.error("jq worker failed to start: %s", hello.get("message"))
            raise QueryError("jq could not be started on this server (libjq could not be loaded).")
        worker.landlock = bool(hello.get("landlock"))
        log.debug("jq worker %d started (landlock=%s)", proc.pid, worker.landlock)
        return worker

    def alive(self) -> bool:
        """False if the process is gone or going, e.g. killed while idle.

        A killed worker's main thread turns zombie first; until its other threads have exited too, `waitpid`
        reports nothing and its socket stays open, so the process state is read as well.
        """
        if self.proc.poll() is not None:
            return False
        if _PROCFS:
            try:
                state = Path(f"/proc/{self.proc.pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            except (OSError, IndexError):
                return False
            if state in (b"Z", b"X"):
                return False
        try:
            return self.sock.recv(1, socket.MSG_PEEK) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False

    async def request(self, header: dict[str, Any], fd: int | None, payload: Any, reply_limit: int) -> dict[str, Any]:
        """Send one query (with the stored file's descriptor, or followed by the bytes) and await the reply."""
        frame = encode_frame(header)
        if fd is not None:
            await _send_with_fd(self.sock, frame, fd)
        else:
            await _send_all(self.sock, frame)
            if len(payload):
                await _send_all(self.sock, payload)
        return await _recv_frame(self.sock, reply_limit)

    def kill(self) -> None:
        if self.proc.poll() is None:  # never signal a reaped pid: it may belong to someone else by now
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.sock.close()

    async def discard(self) -> None:
        """Kill and reap, without blocking the event loop; safe to await while being cancelled."""
        self.kill()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_REAP_TIMEOUT_S):
            await anyio.to_thread.run_sync(self.proc.wait, abandon_on_cancel=True)

    async def exit_status(self) -> int | None:
        """The worker's exit status once it has gone away mid-query (awaited briefly, never forced)."""
        with anyio.move_on_after(1.0):
            await anyio.to_thread.run_sync(self.proc.wait, abandon_on_cancel=True)
        return self.proc.poll()

    async def death_reason(self, memory_mb: int) -> str:
        """Why the worker went away mid-query, from its exit status."""
        code = await self.exit_status()
        if code == -signal.SIGABRT:  # libjq aborts when an allocation fails under RLIMIT_AS
            return f"ran out of memory (limit {memory_mb} MB)"
        if code == -signal.SIGKILL:
            return "was killed (the machine may be out of memory)"
        if code in (-signal.SIGSEGV, -signal.SIGBUS):
            return "crashed (for example on a value nested too deeply)"
        return "stopped unexpectedly"


# -- the pool ------------------------------------------------------------------------------------------------------
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
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
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
        return self._result(reply, output, time.perf_counter() - started)

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
        except _WorkerGone:
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
            raise _CrowdedOut(QueryError(_OUT_OF_MEMORY))
        return reply

    async def _checkout(self, key: str | None, program: str) -> _Worker:
        while self._idle:
            worker = self._pick(key, program)
            self._idle.remove(worker)
            if worker.alive():
                return worker
            self._all.discard(worker)
            await worker.discard()
        if self._libjq is None:
            self._libjq = _libjq_path()
        worker = await _Worker.start(self._libjq)
        if self._closed:
            await worker.discard()
            raise QueryError("jq is shutting down on this server; try again later.")
        self._all.add(worker)
        return worker

    def _pick(self, key: str | None, program: str) -> _Worker:
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

    @staticmethod
    def _result(reply: dict[str, Any], output: StoredOutput, elapsed: float) -> JqResult:
        if reply.get("ok"):
            return JqResult(
                text=str(reply["text"]),
                results=int(reply["results"]),
                truncated=bool(reply["truncated"]),
                elapsed_s=elapsed,
                cached=bool(reply.get("cached")),
            )
        error, message = reply.get("error"), str(reply.get("message", ""))
        if error == "compile":
            raise QueryError(message)
        if error == "runtime":
            shown = f"jq: error: {message}" if reply.get("string") else f"jq: error (not a string): {message}"
            if message == "break":
                shown += " (this is how jq says that input/inputs read past the last JSON value)"
            raise QueryError(shown)
        if error == "halt":
            detail = f": {message.rstrip()}" if message.strip() else ""
            raise QueryError(f"the jq program stopped with halt_error, exit status {reply.get('exit_code')}{detail}")
        if error == "input":
            raise QueryError(
                f"jq could not parse output {output.meta.handle} as JSON ({message}). "
                "Use read_large_output or search_large_output on it instead."
            )
        if error == "memory":
            raise QueryError(_OUT_OF_MEMORY)
        if error == "too_large":
            raise QueryError(f"output {output.meta.handle} is too large for jq (over 2 GiB).")
        raise QueryError("jq failed unexpectedly on this output.")

    async def aclose(self) -> None:
        """Kill every worker (idle or busy). Workers also die on their own if this process dies."""
        self._closed = True
        workers, self._idle, self._all = list(self._all), [], set()
        for worker in workers:
            worker.kill()
        for worker in workers:
            await worker.discard()
