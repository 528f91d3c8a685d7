"""Fixtures for the store suites: a real redis-server, a fake clock, and a backend-parametrized store factory.

Registered as a plugin by tests/conftest.py; the store tests import its helpers. Redis: when
REDIS_URL is set (`.ci/redis.sh start` prints it) the suite uses that server; otherwise it starts its own
redis-server on a free loopback port. Redis Cluster likewise: REDIS_CLUSTER_URL (`.ci/redis-cluster.sh start`),
else a cluster of our own (3 masters, 3 replicas) started by that script for the session. Each test gets its own
key prefix, so tests never see each other's data. Without a redis-server binary the Redis half of the suite is
skipped with a loud reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.core.services import build_services
from mcp_offload.mcp_server.offload_server import OffloadServer, build_server
from mcp_offload.settings import Settings
from mcp_offload.store.base import AdminStore, OutputMeta, Store
from mcp_offload.store.content_index import ContentIndex
from mcp_offload.store.fs import FilesystemStore
from mcp_offload.store.handles import new_handle, scope_key
from mcp_offload.store.lifecycle import StoreLimits
from mcp_offload.store.redis import RedisStore
from support import HANG_TIMEOUT_S, free_port
from support.isolation import worker_redis_url

NO_REDIS = (
    "redis-server is not installed, so the Redis backend is NOT tested: run `.ci/redis.sh start` "
    "(installs the Debian package) or `apt-get install redis-server`"
)

SCOPE_A = scope_key("session-a")
SCOPE_B = scope_key("session-b")


class RedisServer:
    """A redis-server child process on a loopback port, without persistence; can be stopped and restarted."""

    def __init__(self, port: int | None = None, *, extra: Sequence[str] = ()) -> None:
        self.port = port or free_port()
        self.extra = list(extra)  # more redis-server options, e.g. ["--replicaof", "127.0.0.1", "6379"]
        self.proc: subprocess.Popen[bytes] | None = None
        # its working directory: a master writes dump.rdb there for a replica's full sync even with `--save ""`
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-offload-redis-"))

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.dir.mkdir(parents=True, exist_ok=True)  # again after a stop
        self.proc = subprocess.Popen(
            [
                "redis-server",
                *("--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"),
                *("--dir", str(self.dir)),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + HANG_TIMEOUT_S
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
        shutil.rmtree(self.dir, ignore_errors=True)


def have_redis_server() -> bool:
    return shutil.which("redis-server") is not None


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """A reachable Redis for the whole session: $REDIS_URL, or our own redis-server."""
    if os.environ.get("REDIS_URL"):
        yield worker_redis_url(os.environ["REDIS_URL"])  # this worker's database (support.isolation)
        return
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer().start()
    try:
        yield server.url
    finally:
        server.stop()


REPO = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO / ".ci" / "redis-cluster.sh"


class RedisCluster:
    """A Redis Cluster of six loopback redis-servers (3 masters, 3 replicas) started by `.ci/redis-cluster.sh`."""

    def __init__(self, state: Path, *, node_timeout_ms: int = 1500) -> None:
        self.state = state
        self.node_timeout_ms = node_timeout_ms
        self.url = ""

    def start(self) -> RedisCluster:
        ports = " ".join(str(free_port(with_bus=True)) for _ in range(6))  # this worker's ports (support.ports)
        env = {**os.environ, "CLUSTER_NODE_TIMEOUT_MS": str(self.node_timeout_ms), "PORTS": ports}
        done = subprocess.run(
            ["bash", str(CLUSTER_SCRIPT), "start", str(self.state)],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_TIMEOUT_S,
        )
        if done.returncode != 0 or not done.stdout.startswith("REDIS_CLUSTER_URL="):
            raise RuntimeError(f"the Redis Cluster did not start: {done.stderr[-2000:]}")
        self.url = done.stdout.strip().split("=", 1)[1]
        return self

    @property
    def ports(self) -> list[int]:
        return [int(p) for p in (self.state / "ports").read_text().split()]

    def pid(self, port: int) -> int:
        return int((self.state / str(port) / "redis.pid").read_text())

    def restart(self, port: int) -> None:
        """Start a killed node again on its port with its nodes.conf (the options of .ci/redis-cluster.sh)."""
        node = self.state / str(port)
        subprocess.run(
            [
                "redis-server",
                *("--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"),
                *("--protected-mode", "yes", "--cluster-enabled", "yes"),
                *("--cluster-config-file", str(node / "nodes.conf")),
                *("--cluster-node-timeout", str(self.node_timeout_ms)),
                *("--daemonize", "yes", "--pidfile", str(node / "redis.pid")),
                *("--logfile", str(node / "redis.log"), "--dir", str(node)),
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )

    def stop(self) -> None:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop", str(self.state)], capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def redis_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A reachable Redis Cluster for the whole session: $REDIS_CLUSTER_URL, or our own six nodes."""
    if os.environ.get("REDIS_CLUSTER_URL"):
        yield os.environ["REDIS_CLUSTER_URL"]
        return
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-cluster")).start()
    try:
        yield cluster.url
    finally:
        cluster.stop()


@pytest.fixture
def private_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisCluster]:
    """A Redis Cluster of this test alone (to kill a master): failover within ~3 s (cluster-node-timeout 1 s)."""
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    cluster = RedisCluster(tmp_path_factory.mktemp("private-cluster"), node_timeout_ms=1000).start()
    try:
        yield cluster
    finally:
        cluster.stop()


def redis_location(request: pytest.FixtureRequest, backend: str) -> str:
    """The URL of the parametrized Redis backend: "redis" (one node) or "cluster"."""
    return str(request.getfixturevalue("redis_cluster_url" if backend == "cluster" else "redis_url"))


@pytest.fixture(params=["redis", "cluster"])
def shared_redis(request: pytest.FixtureRequest) -> str:
    """One Redis node, then a Redis Cluster: for the tests of several instances sharing one Redis store."""
    return redis_location(request, str(request.param))


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


@pytest.fixture(params=["fs", "redis", "cluster"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
async def make_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    """`make_store(limits=..., clock=...)` -> a store of the parametrized backend; same data for every call."""
    url = redis_location(request, backend) if backend != "fs" else None
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
