"""One jq worker process: how it is started, whether it is alive, one request, kill and reap, why it died.

Invariants: a worker runs `python -I -S` with an empty environment, `/` as its directory, /dev/null on its standard
streams (stdout is the MCP wire) and its own process group, so `kill()` takes the whole group; a reaped pid is
never signalled. It is started from the event-loop thread (PR_SET_PDEATHSIG follows the spawning thread) and must
say "ready" within `_START_TIMEOUT_S`, else it is killed and the query fails with a clear `QueryError`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio

from mcp_offload.errors import QueryError
from mcp_offload.retrieve.jq_wire import WorkerGone, recv_frame, send_all, send_with_fd
from mcp_offload.retrieve.jq_worker.protocol import cache_serves, encode_frame

log = logging.getLogger(__name__)

# The worker imports its package as the top-level `jq_worker` from this directory, never as part of mcp_offload
# (whose imports would slow its start-up and reach past its sandbox): stdlib first on its path, then this directory.
_WORKER_HOME = Path(__file__).parent
_WORKER_BOOTSTRAP = (
    "import sys; sys.path.append(sys.argv[1]); from jq_worker.main import main; sys.exit(main(sys.argv[2:]))"
)
_PROCFS = Path("/proc/self/stat").exists()
_SOCKET_BUFFER = 4 * 1024 * 1024
_START_TIMEOUT_S = 30.0
_REAP_TIMEOUT_S = 5.0


def worker_command(libjq: str, parent_pid: int, fd: int) -> list[str]:
    """The worker's command line: stdlib only (`-I -S`), the `jq_worker` package found in `_WORKER_HOME`."""
    return [sys.executable, "-I", "-S", "-c", _WORKER_BOOTSTRAP, str(_WORKER_HOME), libjq, str(parent_pid), str(fd)]


def libjq_path() -> str:
    """jq.py's extension module, which carries (and exports) libjq; found without importing it here."""
    spec = importlib.util.find_spec("jq")
    if spec is None or not spec.origin:
        raise QueryError("jq is not available on this server (the `jq` Python package is not installed).")
    return spec.origin


class JqWorker:
    """One warm worker process, its socket, and what it last said it holds parsed."""

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
    async def start(cls, libjq: str) -> JqWorker:
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
                hello = await recv_frame(ours)
        except (TimeoutError, WorkerGone, ValueError) as exc:
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
            await send_with_fd(self.sock, frame, fd)
        else:
            await send_all(self.sock, frame)
            if len(payload):
                await send_all(self.sock, payload)
        return await recv_frame(self.sock, reply_limit)

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
