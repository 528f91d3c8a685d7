"""The sandbox a worker closes around itself at start-up: it dies with the server, has no working directory, no
file access (Landlock, best effort) and a memory cap set before each query (`MemoryCap`).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import struct
import sys
import tempfile
import threading
import time

from .libc import load_libc

WATCHDOG_INTERVAL_S = 0.5
_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1


def die_with_parent(parent_pid: int) -> None:
    """Never outlive the server: a kernel signal on Linux, and a watchdog thread everywhere.

    ctypes releases the GIL during libjq calls, so the watchdog runs even while a program spins.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            load_libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCHDOG_INTERVAL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()


def enter_empty_directory() -> None:
    """cwd = a directory that no longer exists: every relative path lookup fails."""
    path = tempfile.mkdtemp(prefix="jq-worker-")
    os.chdir(path)
    os.rmdir(path)


def landlock_everything() -> bool:
    """Forbid all filesystem access (and TCP) from now on. Best effort: False where Landlock is unavailable.

    Descriptors opened before (the socket, /proc/self/statm) and descriptors received later keep working.
    """
    if not sys.platform.startswith("linux") or os.uname().machine not in ("x86_64", "aarch64"):
        return False
    libc = load_libc()
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0), _LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return False
    fs_bits = {1: 13, 2: 14, 3: 15, 4: 15}.get(abi, 16)  # REFER (v2), TRUNCATE (v3), IOCTL_DEV (v5)
    handled_fs = (1 << fs_bits) - 1
    handled_net = 0b11 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP
    scoped = 0b11 if abi >= 6 else 0  # abstract UNIX sockets | signals
    if abi >= 6:
        attr: bytes = struct.pack("=QQQ", handled_fs, handled_net, scoped)
    elif abi >= 4:
        attr = struct.pack("=QQ", handled_fs, handled_net)
    else:
        attr = struct.pack("=Q", handled_fs)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, buf, ctypes.c_size_t(len(attr)), 0)
    if ruleset < 0:
        return False
    try:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return bool(libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), 0) == 0)
    finally:
        os.close(ruleset)


class MemoryCap:
    """RLIMIT_AS = what the process maps now + `extra` (see `handle`), set before each query."""

    def __init__(self) -> None:
        try:  # opened now: Landlock forbids opening it later
            self._statm = os.open("/proc/self/statm", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            self._statm = -1  # no procfs (not Linux): no memory cap
        self._page = os.sysconf("SC_PAGE_SIZE")
        self._hard = resource.getrlimit(resource.RLIMIT_AS)[1]

    def mapped_bytes(self) -> int:
        return int(os.pread(self._statm, 256, 0).split()[0]) * self._page

    def limit(self, extra: int) -> None:
        if self._statm < 0:
            return
        soft = self.mapped_bytes() + extra
        if self._hard != resource.RLIM_INFINITY:
            soft = min(soft, self._hard)
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_AS, (soft, self._hard))

    def lift(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_AS, (self._hard, self._hard))
