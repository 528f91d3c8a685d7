"""Run a child (the wrapped agent) as if it were run directly: the same stdin, stdout, stderr and terminal, its
signals passed on, and its exit status passed back.

The child stays in our process group, so it stays in the terminal's foreground group and reads the terminal (a TUI
works, Ctrl-Z and Ctrl-C reach it from the terminal itself). Signals sent to us are sent on to it: SIGTERM, SIGHUP,
SIGUSR1, SIGUSR2 always, SIGINT and SIGQUIT only when they did not come from the terminal (when our group is not the
terminal's foreground group; otherwise the terminal delivered them to the child already, and a second Ctrl-C would
read as a double press). A child killed by a signal makes us die of the same signal, after cleaning up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from types import FrameType

FORWARDED = (signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGQUIT)
FROM_TERMINAL = (signal.SIGINT, signal.SIGQUIT)


def run_child(argv: list[str], env: Mapping[str, str]) -> int:
    """Run `argv` to its end; its exit status, or minus the signal that killed it (as `Popen.returncode`)."""
    child = subprocess.Popen(argv, env=dict(env))  # stdin/stdout/stderr/tty inherited

    def forward(signum: int, _frame: FrameType | None) -> None:
        if signum in FROM_TERMINAL and _terminal_delivered():
            return
        with contextlib.suppress(ProcessLookupError):
            child.send_signal(signum)

    with _handlers(forward):
        return child.wait()


def die_like(returncode: int) -> int:
    """The exit status for a child's `returncode`: its own; for a child killed by a signal, die of the same signal
    (the shell then sees what it would have seen running the child), or 128 + the signal if we survive it."""
    if returncode >= 0:
        return returncode
    signum = -returncode
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
    return 128 + signum


@contextlib.contextmanager
def _handlers(handler: signal.Handlers | object) -> Iterator[None]:
    previous = {signum: signal.signal(signum, handler) for signum in FORWARDED}  # type: ignore[arg-type]
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _terminal_delivered() -> bool:
    """Whether our process group is the controlling terminal's foreground group (so a Ctrl-C reached the child)."""
    try:
        fd = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(fd)
