"""Loopback ports for servers a test starts as a child process (which must be told a port before it binds).

`bind(("127.0.0.1", 0))`, close, then hand the port to a child is a race: between the close and the child's bind the
kernel may give the same port to another process's `bind(0)` or use it as the local end of an outgoing connection
(both draw from the ephemeral range, 32768-60999 on Linux), and with several pytest-xdist workers and the team's
other suites on one machine that happens. So a port comes from below the ephemeral range, from a slice of 10000-19999
of this worker's own (gw0, gw1, … get disjoint slices), taken in turn from a random start, and is checked free (and,
for a Redis Cluster node, its bus port + 10000 too) before it is handed out. A port is handed out again by the same
worker only after the whole slice went round.

Servers the test process runs itself (uvicorn in a thread, a socket it keeps) bind port 0 and read the port back:
there is no race there, and no need for this module.
"""

from __future__ import annotations

import os
import random
import socket
import threading

LOW, HIGH = 10_000, 20_000  # bus ports of Redis Cluster nodes (+10000) stay below the ephemeral range too
BUS_OFFSET = 10_000


SLOTS_VARIABLE = "MCP_OFFLOAD_TEST_SLOTS"  # "FIRST/TOTAL": this run's workers are slots FIRST… of TOTAL (see below)


def _slots() -> tuple[int, int]:
    """(first, total) from `MCP_OFFLOAD_TEST_SLOTS`, (0, 0) without it. `.ci/run` runs two pytest sessions at once
    (the real agents' beside the rest): the second's gw0, gw1, … are slots 3, 4, … of 5, so no two workers of the two
    sessions share a port slice or a Redis database."""
    first, _, total = os.environ.get(SLOTS_VARIABLE, "").partition("/")
    if not (first.isdigit() and total.isdigit()):
        return 0, 0
    return int(first), int(total)


def worker_index() -> int:
    """0 for gw0 and for a run without xdist, n for gwN (plus the session's first slot, see `_slots`)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    return _slots()[0] + (int(worker[2:]) if worker.startswith("gw") and worker[2:].isdigit() else 0)


def worker_count() -> int:
    count = os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    first, total = _slots()
    return max(total, first + (int(count) if count.isdigit() and int(count) > 0 else 1))


def _slice_of(index: int, count: int) -> range:
    width = (HIGH - LOW) // count
    start = LOW + (index % count) * width
    return range(start, start + width)


def _slice() -> range:
    return _slice_of(worker_index(), worker_count())


_lock = threading.Lock()
_ports = _slice()
_next = random.randrange(len(_ports))


def _bindable(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(*, with_bus: bool = False) -> int:
    """A loopback port nothing listens on, this worker's own; `with_bus`: port + 10000 is free too (Redis Cluster)."""
    global _next
    with _lock:
        for _ in range(len(_ports)):
            port = _ports[_next % len(_ports)]
            _next += 1
            if _bindable(port) and (not with_bus or _bindable(port + BUS_OFFSET)):
                return port
    raise RuntimeError(f"no free loopback port in {_ports.start}-{_ports.stop - 1} (this worker's slice)")
