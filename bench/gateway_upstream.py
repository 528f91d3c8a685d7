"""bench/gateway.py's scripted upstream in its own process (as a provider is: the gateway's extra hop is then
measured fairly): `gateway.py --serve-upstream` prints its port and serves until its stdin closes."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2

GATEWAY_BENCH = Path(__file__).resolve().parent / "gateway.py"


@dataclass(slots=True)
class RemoteUpstream:
    base_url: str
    process: subprocess.Popen[bytes]

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    def requests(self) -> list[dict[str, Any]]:
        return list(httpx2.get(self.base_url + "/_upstream/requests", timeout=60).json())


@contextlib.contextmanager
def upstream_process(quick: bool) -> Iterator[RemoteUpstream]:
    with child_upstream([sys.executable, str(GATEWAY_BENCH), "--serve-upstream", *(["--quick"] if quick else [])]) as (
        base_url,
        proc,
    ):
        yield RemoteUpstream(base_url, proc)


@contextlib.contextmanager
def child_upstream(argv: list[str]) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """A scripted upstream in a process of its own (`argv` prints its port, then serves until its stdin closes): its
    base URL and the process. bench/isolation.py and bench/workers.py start theirs with it too."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        line = proc.stdout.readline() if proc.stdout else b""
        if not line.strip().isdigit():
            raise RuntimeError("the scripted upstream did not start")
        yield f"http://127.0.0.1:{int(line)}", proc
    finally:
        if proc.stdin:
            proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
