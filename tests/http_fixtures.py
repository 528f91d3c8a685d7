"""Helpers for tests that start a real `mcp-offload` HTTP process."""

from __future__ import annotations

import contextlib

import anyio
import httpx2


async def wait_healthy(base: str, timeout_s: float = 30) -> None:
    """Wait until the server at `base` answers /healthz with 200 (fails after `timeout_s`)."""
    async with httpx2.AsyncClient() as http:
        with anyio.fail_after(timeout_s):
            while True:
                with contextlib.suppress(httpx2.HTTPError):
                    if (await http.get(base + "/healthz")).status_code == 200:
                        return
                await anyio.sleep(0.1)
