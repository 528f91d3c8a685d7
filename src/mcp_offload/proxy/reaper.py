"""mcp-offload: reaper of one upstream MCP server's process group (a script, shipped as package data).

Runs as `python -I -S <this file> <command> <args…>` (see `proxy/transports/stdio.py`): the leader of the server's
process group (the SDK starts it in a new session). It forks the server and waits for: the server's exit, a signal
(the SDK's SIGTERM to the group at shutdown), or the death of the proxy (Linux: PR_SET_PDEATHSIG sends SIGTERM at
once; elsewhere a 1 s timer notices the new parent). Then it SIGTERMs the group, gives it 2 s, and SIGKILLs what is
left. Portable POSIX only (macOS has neither prctl nor sigtimedwait). Standard library only: `-I -S` sees no site.
"""

import contextlib
import os
import signal
import sys
import time
from types import FrameType


class Stop(Exception):
    pass


def main() -> None:
    parent = os.getppid()

    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stop()

    def check_parent(signum: int, frame: FrameType | None) -> None:
        if os.getppid() != parent:
            raise Stop()

    with contextlib.suppress(Exception):  # not Linux: the 1 s parent check below does it
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    watched = {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    for sig in watched:
        signal.signal(sig, stop)
    signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # no Stop may land between fork() and keeping its pid
    pid = os.fork()
    if pid == 0:
        for sig in watched:
            signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        except OSError as exc:
            sys.stderr.write(f"cannot start {sys.argv[1]!r}: {exc.strerror}\n")
        os._exit(127)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    status: int | None = None
    gone = False
    try:
        signal.signal(signal.SIGALRM, check_parent)
        signal.setitimer(signal.ITIMER_REAL, 1.0, 1.0)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, watched)
        if os.getppid() != parent:
            raise Stop()
        status = os.waitpid(pid, 0)[1]
    except Stop:  # may land after waitpid() reaped the server but before `status` was set: then ECHILD below
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    for sig in (*watched, signal.SIGALRM):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + 2.0
    while status is None and not gone and time.monotonic() < deadline:
        try:
            done, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            gone = True
            break
        if done:
            status = st
        else:
            time.sleep(0.02)
    if status is None and not gone:
        os.killpg(0, signal.SIGKILL)
    code = os.waitstatus_to_exitcode(status) if status is not None else 1
    os._exit(code if code >= 0 else 128 - code)


if __name__ == "__main__":
    main()
