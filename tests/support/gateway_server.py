"""The real gateway for tests (a plugin, registered in tests/conftest.py): `GatewayApp` under uvicorn in a thread with
its own event loop (so sync SDK clients can call it), in front of the scripted LLM upstream (tests/llm_upstream).

Fixtures: `start_gateway(upstream, store=..., **GatewayOptions changes)` and `upstream` (the `llm_upstream` one)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from llm_upstream import UpstreamServer
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.core.services import build_services
from mcp_offload.gateway.app import GatewayApp
from mcp_offload.gateway.options import GatewayOptions, LoopLimits
from mcp_offload.gateway.upstream import ProviderConfig
from mcp_offload.providers.registry import PROVIDERS
from mcp_offload.settings import Settings
from support import HANG_TIMEOUT_S


class GatewayServer:
    """The gateway on a free loopback port, in a background thread; `app` is reachable for assertions."""

    def __init__(self, settings: Settings, options: GatewayOptions) -> None:
        self.settings, self.options = settings, options
        self.app: GatewayApp | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    def start(self) -> GatewayServer:
        ready = threading.Event()

        async def main() -> None:
            services = build_services(self.settings)
            self.app = GatewayApp(services, self.options)
            self.loop = asyncio.get_running_loop()
            config = uvicorn.Config(
                self.app, host="127.0.0.1", port=0, log_config=None, access_log=False, lifespan="on",
                server_header=False, date_header=False, timeout_graceful_shutdown=1,
            )  # fmt: skip
            self._server = uvicorn.Server(config)
            ready.set()
            try:
                await self._server.serve()
            finally:
                await self.app.aclose()
                await services.aclose()

        self._thread = threading.Thread(target=lambda: asyncio.run(main()), name="gateway", daemon=True)
        self._thread.start()
        ready.wait(15)
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while self._server is None or not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)

    def run(self, coro: Any) -> Any:
        """Run a coroutine on the gateway's loop (e.g. a store read) and wait for it."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"


def upstream_bases(base: str) -> dict[str, str | None]:
    """Every registered provider pointed at the scripted upstream at `base` (OpenAI's base carries its /v1)."""
    return {**{name: base for name in PROVIDERS}, "openai": base + "/v1"}


def gateway_options(upstream: UpstreamServer | str, /, **changes: Any) -> GatewayOptions:
    base = upstream if isinstance(upstream, str) else upstream.base_url
    policy = changes.pop("policy", RewritePolicy())
    limits = changes.pop("limits", LoopLimits(max_loops=4, ping_interval_s=0.2))
    return dataclasses.replace(
        GatewayOptions(
            port=0,
            upstream=changes.pop("upstream", ProviderConfig(bases=upstream_bases(base), read_timeout_s=30)),
            policy=policy,
            limits=limits,
        ),
        **changes,
    )


StartGateway = Callable[..., GatewayServer]


@pytest.fixture
def start_gateway(tmp_path: Path) -> Iterator[StartGateway]:
    """`start_gateway(upstream, store=..., settings={Settings changes}, **GatewayOptions changes)`: a running gateway,
    stopped after the test."""
    started: list[GatewayServer] = []

    def start(  # positional-only: `upstream=ProviderConfig(...)` is a GatewayOptions change
        upstream: UpstreamServer | str, /, *, store: str | None = None, settings: Any = None, **changes: Any
    ) -> GatewayServer:
        chosen = Settings(store=store or str(tmp_path / "store"), jq_workers=1, jq_timeout_s=5.0)
        settings = dataclasses.replace(chosen, **(settings or {}))
        server = GatewayServer(settings, gateway_options(upstream, **changes)).start()
        started.append(server)
        return server

    yield start
    for server in started:
        with contextlib.suppress(Exception):
            server.stop()


@pytest.fixture
def upstream(llm_upstream: UpstreamServer) -> UpstreamServer:
    """The scripted LLM API (the `llm_upstream` plugin fixture), under a shorter name."""
    return llm_upstream
