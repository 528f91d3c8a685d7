"""`mcp-offload gateway` as its own process, as a user runs it: on a free loopback port in front of an LLM upstream,
waited on until `/healthz` answers. Used by the tests that run it as a subprocess and by `bench/gateway.py`."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx2

from support import HANG_TIMEOUT_S, free_port

GATEWAY = [sys.executable, "-m", "mcp_offload", "gateway"]


def gateway_args(port: int, store: str | Path, anthropic_base: str, openai_base: str, *extra: str) -> list[str]:
    """The command line of a gateway on `port` with `store`, relaying to the two upstream base URLs."""
    return [*GATEWAY, "--port", str(port), "--store", str(store), "--anthropic-upstream", anthropic_base,
            "--openai-upstream", openai_base, *extra]  # fmt: skip


def wait_healthy(
    base: str, proc: subprocess.Popen[bytes], output: Callable[[], str], timeout_s: float = HANG_TIMEOUT_S
) -> None:
    """Until `base/healthz` answers 200; RuntimeError with the tail of `output()` if the process exits first, or
    when `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited ({proc.returncode}): {output()[-2000:]}")
        with contextlib.suppress(httpx2.HTTPError):
            if httpx2.get(base + "/healthz", timeout=1).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"the gateway did not become healthy in {timeout_s:g} s: {output()[-2000:]}")
        time.sleep(0.1)


@contextlib.contextmanager
def gateway_process(
    store: str | Path,
    anthropic_base: str,
    openai_base: str,
    log_path: Path,
    *extra: str,
    timeout_s: float = HANG_TIMEOUT_S,
) -> Iterator[str]:
    """A healthy gateway process (stdout and stderr to `log_path`); yields its base URL, then terminates it."""
    port = free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            gateway_args(port, store, anthropic_base, openai_base, *extra), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            base = f"http://127.0.0.1:{port}"
            wait_healthy(base, proc, lambda: log_path.read_text(errors="replace"), timeout_s)
            yield base
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
