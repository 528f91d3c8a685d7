"""mcp-offload: reaper of one upstream MCP server's process group (a script, shipped as package data).

Runs as `python -I -S <this file> <command> <args…>` (see `proxy/transports/stdio.py`): the leader of the server's
process group (the SDK starts it in a new session). It forks the server and waits for: the server's exit, a signal
(the SDK's SIGTERM to the group at shutdown), or the death of the proxy (Linux: PR_SET_PDEATHSIG sends SIGTERM at
once; elsewhere a 1 s timer notices the new parent). Then it SIGTERMs the group, gives the server 2 s, and SIGKILLs
the group if the server is still there.

Signals never raise here: their handlers do nothing and `signal.set_wakeup_fd` writes each signal's number to a
pipe, which one loop reads. (Raising from a handler lost the group when a second signal, say the SDK's SIGTERM and
then the proxy's death, landed while the first was being handled.) Portable POSIX only (macOS has neither prctl nor
sigtimedwait). Standard library only: `-I -S` sees no site.
"""

import contextlib
import os
import select
import signal
import sys
import time
from types import FrameType

STOP_SIGNALS = frozenset({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
GRACE_S = 2.0


def _noted(signum: int, frame: FrameType | None) -> None:
    """The byte `set_wakeup_fd` writes is the whole message."""


def _exit_code(status: int | None) -> int:
    code = os.waitstatus_to_exitcode(status) if status is not None else 1
    return code if code >= 0 else 128 - code


def main() -> None:
    parent = os.getppid()
    with contextlib.suppress(Exception):  # not Linux: the 1 s parent check below does it
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    wake_read, wake_write = os.pipe()  # both close on exec
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    watched = {*STOP_SIGNALS, signal.SIGCHLD, signal.SIGALRM}
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # the child must not run our handlers before its exec
    for sig in watched:
        signal.signal(sig, _noted)
    pid = os.fork()
    if pid == 0:
        signal.set_wakeup_fd(-1)
        for sig in watched:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        except OSError as exc:
            sys.stderr.write(f"cannot start {sys.argv[1]!r}: {exc.strerror}\n")
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)  # the SDK's pipes belong to the server alone: its exit must close them
    os.dup2(null, 1)
    signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
    status = _wait(pid, parent, wake_read)
    signal.setitimer(signal.ITIMER_REAL, 0)
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGTERM)  # reaches us too: a no-op handler
    deadline = time.monotonic() + GRACE_S
    while status is None and time.monotonic() < deadline:
        try:
            done, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            break
        if done:
            status = st
        else:
            time.sleep(0.02)
    if status is None:
        with contextlib.suppress(OSError):
            os.killpg(0, signal.SIGKILL)  # ends us too
    os._exit(_exit_code(status))


def _wait(pid: int, parent: int, wake: int) -> int | None:
    """Until the server exits (its wait status) or we are told to stop (None)."""
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if os.getppid() != parent:
            return None
        select.select([wake], [], [])
        try:
            received = os.read(wake, 512)
        except BlockingIOError:
            received = b""
        if any(signum in STOP_SIGNALS for signum in received):
            return None


if __name__ == "__main__":
    main()
