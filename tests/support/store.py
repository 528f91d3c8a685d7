"""Fixtures for the store suites: a real redis-server, a fake clock, and a backend-parametrized store factory.

Registered as a plugin by tests/conftest.py; the store tests import its helpers. Redis: when
REDIS_URL is set (`.ci/redis.sh start` prints it) the suite uses that server; otherwise it starts its own
redis-server on a free loopback port. Each test gets its own key prefix, so tests never see each other's data.
Without a redis-server binary the Redis half of the suite is skipped with a loud reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.core.services import build_services
from mcp_offload.server.offload_server import OffloadServer, build_server
from mcp_offload.settings import Settings
from mcp_offload.store.base import AdminStore, OutputMeta, Store
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import new_handle, scope_key
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.redis import RedisStore
from support import free_port

NO_REDIS = (
    "redis-server is not installed, so the Redis backend is NOT tested: run `.ci/redis.sh start` "
    "(installs the Debian package) or `apt-get install redis-server`"
)

SCOPE_A = scope_key("session-a")
SCOPE_B = scope_key("session-b")


class RedisServer:
    """A redis-server child process on a loopback port, without persistence; can be stopped and restarted."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


def have_redis_server() -> bool:
    return shutil.which("redis-server") is not None


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A reachable Redis for the whole session: $REDIS_URL, or our own redis-server."""
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A redis-server of this test alone (for stop/restart tests)."""
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.stop()


class FakeClock:
    """An injectable clock: starts at real time, moves only when told."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


StoreFactory = Callable[..., AdminStore]


@pytest.fixture(params=["fs", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    """`make_store(limits=..., clock=...)` -> a store of the parametrized backend; same data for every call."""
    url = request.getfixturevalue("redis_url") if backend == "redis" else None
    prefix = f"mcp-offload-test:{secrets.token_hex(6)}"
    made: list[Store] = []

    def make(*, limits: StoreLimits | None = None, clock: Callable[[], float] = time.time, **kw: Any) -> AdminStore:
        store: AdminStore
        if url is not None:
            store = RedisStore(url, limits=limits, clock=clock, prefix=prefix, **kw)
        else:
            store = FilesystemStore(tmp_path / "store", limits=limits, clock=clock, **kw)
        made.append(store)
        return store

    yield make
    for store in made:
        await store.aclose()


def make_meta(data: bytes, *, kind: str = "text", name: str | None = None, created: float | None = None) -> OutputMeta:
    index = ContentIndex.build(data)
    return OutputMeta(
        handle=new_handle(),
        kind=kind,  # type: ignore[arg-type]
        size=index.size,
        chars=index.chars,
        lines=index.lines,
        tokens=len(data) // 4,
        tokens_estimated=True,
        created=time.time() if created is None else created,
        name=name,
    )


async def put_bytes(store: Store, scope: str, data: bytes, *, name: str | None = None) -> str:
    """Store `data` with a real index; returns the handle."""
    meta = make_meta(data, name=name)
    await store.put(scope, meta, ContentIndex.build(data), data)
    return meta.handle


@pytest.fixture
async def redis_offload_server(redis_url: str) -> AsyncIterator[OffloadServer]:
    """The MCP server over the session's Redis store (one jq worker, a 3 s jq limit)."""
    services = build_services(Settings(store=redis_url, jq_timeout_s=3.0, jq_workers=1))
    try:
        yield build_server(services)
    finally:
        await services.aclose()
