"""`--workers N`: one port served by N processes over the shared store, for both HTTP front ends.

The parent (`supervise`) binds the listening socket once, then starts N workers: each a fresh interpreter running
the same command line, with the socket inherited and `WORKER_ENV` naming its descriptor, the worker's index and a
pipe to say it is ready. Every worker accepts on that one socket (the kernel hands each connection to whichever
worker is waiting), builds its own services over the shared store and serves with `DrainingServer`. The parent
serves nothing and holds no store; it

- forwards SIGTERM / SIGINT to every worker once (the workers are in their own process groups, so a Ctrl-C reaches
  the parent alone) and closes its copy of the socket, so new connections are refused once every worker has
  stopped accepting; each worker drains as a single process does, and the parent exits 0 when all of them did;
- restarts a worker that dies after it was ready (a crash, the OOM killer): the others keep accepting meanwhile and
  connections waiting in the socket's queue are not lost; what a worker acknowledged is in the store already;
- stops everything and exits with the worker's status when a worker fails before it was ready (a store that
  cannot be opened, a port's permission): the failure's one line is the worker's own;
- kills the workers still running `KILL_AFTER_S` after the grace period (exit status 1).

A worker dies with its parent (Linux: `PR_SET_PDEATHSIG`), so a SIGKILL'd parent leaves no worker behind.

Why one shared socket and not SO_REUSEPORT (one socket per worker, the kernel hashing connections among them): a
worker's death with SO_REUSEPORT resets the connections queued on its socket, and while it restarts, the
connections hashed to it wait; with one shared socket the others take them. uvicorn's own `--workers` supervisor
shares one socket too, but runs plain `uvicorn.Server`s (no drain before shutdown, the signal re-raised: a worker
SIGTERM'd dies by it instead of exiting 0) from an import string, where the services are built per worker here.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import FrameType

from mcp_offload.errors import OperatorError

log = logging.getLogger("mcp_offload.workers")

WORKER_ENV = "MCP_OFFLOAD_WORKER"  # "index:listen fd:ready fd:parent pid", set for a worker by its parent only
KILL_AFTER_S = 15.0  # past the grace period, a worker still running is killed
POLL_S = 0.1
MIN_RESTART_INTERVAL_S = 1.0  # a worker that keeps crashing is restarted at most this often
BACKLOG = 2048  # uvicorn's default


class WorkersRefused(OperatorError):
    """The workers could not be started (the port could not be bound)."""


@dataclass(frozen=True, slots=True)
class WorkerSlot:
    """What a worker is told by its parent: its index, the inherited listening socket, its readiness pipe."""

    index: int
    listen_fd: int
    ready_fd: int

    def listening_socket(self) -> socket.socket:
        sock = socket.socket(fileno=self.listen_fd)  # the family and type are read from the descriptor
        sock.setblocking(False)
        return sock

    def ready(self) -> None:
        """Tell the parent this worker serves (called once the server has started)."""
        with contextlib.suppress(OSError):
            os.write(self.ready_fd, b"r")
            os.close(self.ready_fd)


def worker_slot() -> WorkerSlot | None:
    """This process's slot when its parent started it as a worker (None otherwise). Read once: the variable is
    removed from the environment, so the worker's own children (ingest workers, proxied servers) do not see it."""
    raw = os.environ.pop(WORKER_ENV, None)
    if raw is None:
        return None
    index, listen_fd, ready_fd, parent = (int(part) for part in raw.split(":"))
    _die_with_parent(parent)
    return WorkerSlot(index, listen_fd, ready_fd)


def _die_with_parent(parent: int) -> None:
    """SIGTERM this process when its parent dies (Linux), so a SIGKILL'd supervisor leaves no worker behind."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the line above: nobody would ever stop this worker
        os.kill(os.getpid(), signal.SIGTERM)


def check_workers(value: str) -> int:
    """`--workers`: a whole number of processes, 1 or more."""
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a whole number of worker processes") from None
    if count < 1:
        raise ValueError(f"{count} workers: at least 1 process must serve")
    return count


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound as uvicorn binds (SO_REUSEADDR, the address's own family)."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
            sock.listen(BACKLOG)
        except OSError:
            sock.close()
            raise
    except OSError as exc:
        raise WorkersRefused(f"could not listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


@dataclass(slots=True)
class _Worker:
    index: int
    proc: subprocess.Popen[bytes]
    ready_r: int
    started: float = field(default_factory=time.monotonic)
    ready: bool = False

    def poll_ready(self) -> bool:
        if not self.ready:
            with contextlib.suppress(BlockingIOError, OSError):
                self.ready = bool(os.read(self.ready_r, 1))
        return self.ready


class Supervisor:
    """The parent of `--workers N`: see the module's docstring."""

    def __init__(self, command: Sequence[str], workers: int, sock: socket.socket, grace_s: float) -> None:
        self.command = list(command)
        self.count = workers
        self.sock: socket.socket | None = sock
        self.grace_s = grace_s
        self.workers: dict[int, _Worker] = {}
        self.stop_requested = False
        self.stopping_since: float | None = None
        self.status = 0
        self.restarts = 0

    def _start(self, index: int) -> None:
        assert self.sock is not None
        ready_r, ready_w = os.pipe()
        os.set_blocking(ready_r, False)
        env = {**os.environ, WORKER_ENV: f"{index}:{self.sock.fileno()}:{ready_w}:{os.getpid()}"}
        try:
            proc = subprocess.Popen(
                self.command,
                env=env,
                stdin=subprocess.DEVNULL,
                pass_fds=(self.sock.fileno(), ready_w),
                process_group=0,  # a terminal's Ctrl-C reaches the parent, which stops the workers once
            )
        finally:
            os.close(ready_w)
        self.workers[index] = _Worker(index, proc, ready_r)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.stop_requested = True

    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            for index in range(self.count):
                self._start(index)
            announced = False
            while self.workers:
                if self.stop_requested and self.stopping_since is None:
                    self._stop("stopping: SIGTERM to %d worker(s)")
                self._reap()
                if not announced and len(self.workers) == self.count and all(w.poll_ready() for w in self._alive()):
                    announced = True
                    pids = ", ".join(str(w.proc.pid) for w in self.workers.values())
                    log.info("%d workers serving (pids %s)", self.count, pids)
                if (
                    self.stopping_since is not None
                    and time.monotonic() - self.stopping_since > self.grace_s + KILL_AFTER_S
                ):
                    for worker in self._alive():
                        log.error("worker %d (pid %d) still running: killed", worker.index, worker.proc.pid)
                        worker.proc.kill()
                    self.status = self.status or 1
                time.sleep(POLL_S)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            for worker in self.workers.values():  # only on an error of our own: never leave a worker behind
                worker.proc.kill()
                worker.proc.wait()
            self._close_socket()
        return self.status

    def _alive(self) -> list[_Worker]:
        return [w for w in self.workers.values() if w.proc.returncode is None]

    def _stop(self, why: str) -> None:
        self.stopping_since = time.monotonic()
        self._close_socket()  # once every worker has closed its copy, new connections are refused
        log.info(why, len(self._alive()))
        for worker in self._alive():
            with contextlib.suppress(ProcessLookupError):
                worker.proc.send_signal(signal.SIGTERM)

    def _close_socket(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _reap(self) -> None:
        for index, worker in list(self.workers.items()):
            code = worker.proc.poll()
            if code is None:
                continue
            worker.poll_ready()
            os.close(worker.ready_r)
            del self.workers[index]
            if self.stopping_since is not None:
                if code != 0 and not (code == -signal.SIGTERM and not worker.ready):  # one stopped while starting
                    log.warning("worker %d (pid %d) exited with status %d", index, worker.proc.pid, code)
                    self.status = self.status or (code if code > 0 else 1)
            elif not worker.ready:  # it never served: a start-up failure, the same for every worker
                log.error("worker %d (pid %d) failed to start (status %d): stopping", index, worker.proc.pid, code)
                self.status = code if code > 0 else 1
                self._stop("stopping: SIGTERM to %d worker(s)")
            else:
                log.warning(
                    "worker %d (pid %d) died (%s): restarting it",
                    index,
                    worker.proc.pid,
                    f"signal {-code}" if code < 0 else f"status {code}",
                )
                time.sleep(max(0.0, MIN_RESTART_INTERVAL_S - (time.monotonic() - worker.started)))
                self.restarts += 1
                self._start(index)


def supervise(command: Sequence[str], workers: int, host: str, port: int, grace_s: float) -> int:
    """Bind `host:port`, run `workers` copies of `command` on it until SIGTERM/SIGINT; the exit status."""
    sock = bind(host, port)
    return Supervisor(command, workers, sock, grace_s).run()
