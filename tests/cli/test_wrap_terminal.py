"""`mcp-offload wrap` in a real terminal (a pty from the `pty` module, wrap its session leader and the foreground
group, as a shell runs a command): a SIGINT sent to wrap by a process (`kill -INT`) reaches the agent once, and a
Ctrl-C typed in the terminal reaches it once too (the terminal delivers it to the whole group, agent included; wrap
does not send a second)."""

from __future__ import annotations

import os
import pty
import signal
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.wrap import WRAP, wrap_env

pytestmark = pytest.mark.skipif(not hasattr(signal, "sigtimedwait"), reason="wrap reads the sender where it can")

COUNTING_CHILD = """
import pathlib, signal, sys, time
got = pathlib.Path(sys.argv[1])
def count(signum, frame):
    with got.open("a") as f:
        f.write("INT\\n")
def stop(signum, frame):
    sys.exit(42)
signal.signal(signal.SIGINT, count)
signal.signal(signal.SIGTERM, stop)
pathlib.Path(sys.argv[2]).write_text("ready")
while True:
    time.sleep(0.05)
"""


class Terminal:
    """wrap running in a new pty; what it writes to the terminal is read (and kept) so it never blocks."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.pid, self.master = pty.fork()
        if self.pid == 0:  # the child: the pty's session leader, in its foreground group
            try:
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.output = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                return
            if not chunk:
                return
            self.output += chunk

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def wait(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.05)
        raise AssertionError(f"wrap did not end: {bytes(self.output)!r}")

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        os.close(self.master)


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[tuple[Terminal, Path]]:
    home = tmp_path / "home"
    home.mkdir()
    got, ready = tmp_path / "got", tmp_path / "ready"
    argv = [*WRAP, "--api", "anthropic", "--", sys.executable, "-c", COUNTING_CHILD, str(got), str(ready)]
    term = Terminal(argv, wrap_env(home))
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert time.monotonic() < deadline, f"the agent did not start: {bytes(term.output)!r}"
            time.sleep(0.05)
        yield term, got
    finally:
        term.close()


def interrupts(got: Path, settle_s: float = 1.0) -> int:
    """How many SIGINTs the agent counted once none came for `settle_s` (a second one would come at once)."""
    deadline = time.monotonic() + 10
    while not got.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(settle_s)
    return got.read_text().count("INT") if got.exists() else 0


def test_a_sigint_sent_to_wrap_in_the_foreground_reaches_the_agent_once(terminal: tuple[Terminal, Path]) -> None:
    term, got = terminal
    os.kill(term.pid, signal.SIGINT)  # `kill -INT <wrap>` from another shell: the terminal delivered nothing
    assert interrupts(got) == 1, bytes(term.output)
    os.kill(term.pid, signal.SIGTERM)
    assert term.wait(30) == 42


def test_a_ctrl_c_in_the_terminal_reaches_the_agent_once(terminal: tuple[Terminal, Path]) -> None:
    term, got = terminal
    term.type(b"\x03")  # the terminal's VINTR: SIGINT to the foreground group (wrap and the agent)
    assert interrupts(got) == 1, bytes(term.output)
    os.kill(term.pid, signal.SIGTERM)
    assert term.wait(30) == 42
