"""The cost of a step a test runs in its own thread, in CPU seconds: what a test bounding a step's cost measures.

Wall time is not the step's cost when other pytest-xdist workers (and, on a shared machine, other suites) take turns
on the same two cores: a step of 30 ms took 180 ms of wall time in a parallel run. The thread's CPU time
(`time.thread_time()`) counts only what the step itself ran. Steps that hand their work to other threads or processes
are not measured this way (their bounds guard against hangs and stay generous).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


def best_cpu_of(runs: int, fn: Callable[..., Any], *args: Any) -> float:
    """The least CPU time of `runs` calls of `fn(*args)` in this thread."""
    best = float("inf")
    for _ in range(runs):
        started = time.thread_time()
        fn(*args)
        best = min(best, time.thread_time() - started)
    return best


@dataclass
class CpuSpent:
    seconds: float = 0.0


@contextmanager
def cpu_spent() -> Iterator[CpuSpent]:
    """`with cpu_spent() as spent: …` then `spent.seconds`: the CPU time this thread spent in the block."""
    spent, started = CpuSpent(), time.thread_time()
    try:
        yield spent
    finally:
        spent.seconds = time.thread_time() - started
