"""Fixtures for the store suites: a real redis-server, a fake clock, and a backend-parametrized store factory.

Registered as a plugin by tests/conftest.py; the store tests import its helpers. Redis: when
REDIS_URL is set (`.ci/redis.sh start` prints it) the suite uses that server; otherwise it starts its own
redis-server on a free loopback port. Redis Cluster likewise: REDIS_CLUSTER_URL (`.ci/redis-cluster.sh start`),
else a cluster of our own (3 masters, 3 replicas) started by that script for the session. Over TLS, the same:
REDIS_TLS_URL and REDIS_TLS_CLUSTER_URL (the scripts with REDIS_TLS=1), else our own, each with a throwaway CA
(`make_certs`, .ci/redis-tls-certs.sh); their URLs carry the CA and a client certificate in the query. Each test
gets its own key prefix, so tests never see each other's data (also across pytest-xdist workers, which share the
servers named in the environment); a test that stops or kills nodes starts servers of its own (`private_redis`,
`private_cluster`). Without a redis-server binary the Redis half of the suite is skipped with a loud reason.
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


REPO = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = REPO / ".ci" / "redis-cluster.sh"
CERTS_SCRIPT = REPO / ".ci" / "redis-tls-certs.sh"


def make_certs(directory: Path, *, server_days: int = 30) -> Path:
    """A throwaway CA in `directory` with a server certificate for 127.0.0.1 (expired at once with -1) and a client
    certificate, by `.ci/redis-tls-certs.sh` (openssl)."""
    env = {**os.environ, "SERVER_DAYS": str(server_days)}
    subprocess.run(["bash", str(CERTS_SCRIPT), str(directory)], env=env, check=True, capture_output=True, timeout=60)
    return directory


def tls_query(certs: Path, *, client: bool = True) -> str:
    """The URL query that trusts `certs`' CA (and presents its client certificate)."""
    query = f"ssl_ca_certs={certs}/ca.crt"
    return query + (f"&ssl_certfile={certs}/client.crt&ssl_keyfile={certs}/client.key" if client else "")


def tls_server_options(certs: Path) -> list[str]:
    """redis-server's options for TLS with `certs`, client certificates required."""
    return [
        *("--tls-cert-file", str(certs / "server.crt"), "--tls-key-file", str(certs / "server.key")),
        *("--tls-ca-cert-file", str(certs / "ca.crt"), "--tls-auth-clients", "yes"),
    ]


class RedisServer:
    """A redis-server child process on a loopback port, without persistence; can be stopped and restarted. With
    `tls` (a directory of `make_certs`) it speaks TLS only, client certificates required."""

    def __init__(self, port: int | None = None, *, extra: Sequence[str] = (), tls: Path | None = None) -> None:
        self.port = port or free_port()
        self.extra = list(extra)  # more redis-server options, e.g. ["--replicaof", "127.0.0.1", "6379"]
        self.tls = tls
        self.proc: subprocess.Popen[bytes] | None = None
        # its working directory: a master writes dump.rdb there for a replica's full sync even with `--save ""`
        self.dir = Path(tempfile.mkdtemp(prefix="mcp-offload-redis-"))

    @property
    def url(self) -> str:
        if self.tls is not None:
            return f"rediss://127.0.0.1:{self.port}/0?{tls_query(self.tls)}"
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.dir.mkdir(parents=True, exist_ok=True)  # again after a stop
        listen = ["--port", str(self.port)]
        if self.tls is not None:
            listen = ["--port", "0", "--tls-port", str(self.port), *tls_server_options(self.tls)]
        self.proc = subprocess.Popen(
            [
                "redis-server",
                *("--bind", "127.0.0.1", *listen, "--save", "", "--appendonly", "no"),
                *("--dir", str(self.dir)),
                *self.extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._answers():
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("redis-server did not start")

    def _answers(self) -> bool:
        if self.tls is not None:
            import redis

            unchecked = f"{self.url}&ssl_cert_reqs=none"  # up, whatever its certificate (an expired one, on purpose)
            try:
                with redis.Redis.from_url(unchecked, socket_timeout=0.5, socket_connect_timeout=0.5) as client:
                    return bool(client.ping())
            except redis.exceptions.RedisError:
                return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

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


@pytest.fixture(scope="session")
def redis_tls_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis over TLS (client certificates required) for the whole session: $REDIS_TLS_URL (`REDIS_TLS=1
    .ci/redis.sh start`), or our own, with a throwaway CA; the URL's query carries the CA and client files."""
    if os.environ.get("REDIS_TLS_URL"):
        yield worker_redis_url(os.environ["REDIS_TLS_URL"])  # this worker's database, as for REDIS_URL
        return
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    server = RedisServer(tls=make_certs(tmp_path_factory.mktemp("redis-tls"))).start()
    try:
        yield server.url
    finally:
        server.stop()


class RedisCluster:
    """A Redis Cluster of six loopback redis-servers (3 masters, 3 replicas) started by `.ci/redis-cluster.sh`; with
    `tls`, every node speaks TLS only (clients, cluster bus, replication), its CA in STATE/tls."""

    def __init__(self, state: Path, *, node_timeout_ms: int = 1500, tls: bool = False) -> None:
        self.state = state
        self.node_timeout_ms = node_timeout_ms
        self.tls = tls
        self.url = ""

    def start(self) -> RedisCluster:
        ports = " ".join(str(free_port(with_bus=True)) for _ in range(6))  # this worker's ports (support.ports)
        env = {
            **os.environ,
            "CLUSTER_NODE_TIMEOUT_MS": str(self.node_timeout_ms),
            "PORTS": ports,
            "REDIS_TLS": str(int(self.tls)),
        }
        done = subprocess.run(
            ["bash", str(CLUSTER_SCRIPT), "start", str(self.state)],
            env=env,
            capture_output=True,
            text=True,
            timeout=HANG_TIMEOUT_S,
        )
        name = "REDIS_TLS_CLUSTER_URL=" if self.tls else "REDIS_CLUSTER_URL="
        if done.returncode != 0 or not done.stdout.startswith(name):
            raise RuntimeError(f"the Redis Cluster did not start: {done.stderr[-2000:]}")
        self.url = done.stdout.strip().split("=", 1)[1]
        return self

    def node(self, port: int) -> Any:
        """A plain redis-py client of one node (TLS when the cluster speaks it)."""
        import redis

        if self.tls:
            return redis.Redis.from_url(
                f"rediss://127.0.0.1:{port}/0?{tls_query(self.state / 'tls')}", socket_timeout=2
            )
        return redis.Redis(port=port, socket_timeout=2)

    @property
    def ports(self) -> list[int]:
        return [int(p) for p in (self.state / "ports").read_text().split()]

    def pid(self, port: int) -> int:
        return int((self.state / str(port) / "redis.pid").read_text())

    def restart(self, port: int) -> None:
        """Start a killed node again on its port with its nodes.conf (the options of .ci/redis-cluster.sh)."""
        node = self.state / str(port)
        listen = ["--port", str(port)]
        if self.tls:
            listen = ["--port", "0", "--tls-port", str(port), "--tls-cluster", "yes", "--tls-replication", "yes"]
            listen += tls_server_options(self.state / "tls")
        subprocess.run(
            [
                "redis-server",
                *("--bind", "127.0.0.1", *listen, "--save", "", "--appendonly", "no"),
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

    def role(self, port: int) -> str | None:
        """ "master" or "slave" (Redis's word), None for a node that does not answer."""
        import redis

        try:
            with self.node(port) as node:
                return str(node.info("replication")["role"])
        except redis.exceptions.RedisError:
            return None

    def masters(self) -> list[int]:
        return [port for port in self.ports if self.role(port) == "master"]

    def wait_serving(self, timeout_s: float = 60) -> None:
        """Until every node that answers says cluster_state:ok (every slot served: a failover is over)."""
        import redis

        deadline = time.monotonic() + timeout_s
        while True:
            states = []
            for port in self.ports:
                try:
                    with self.node(port) as node:
                        states.append(b"cluster_state:ok" in node.execute_command("CLUSTER", "INFO"))
                except redis.exceptions.RedisError:
                    pass
            if states and all(states):
                return
            assert time.monotonic() < deadline, "the cluster did not fail over"
            time.sleep(0.2)

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


@pytest.fixture(scope="session")
def redis_tls_cluster_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Redis Cluster over TLS for the whole session: $REDIS_TLS_CLUSTER_URL (`REDIS_TLS=1 .ci/redis-cluster.sh
    start`), or our own six TLS nodes."""
    if os.environ.get("REDIS_TLS_CLUSTER_URL"):
        yield os.environ["REDIS_TLS_CLUSTER_URL"]
        return
    if not have_redis_server():
        pytest.skip(NO_REDIS)
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-tls-cluster"), tls=True).start()
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


REDIS_BACKENDS = {
    "redis": "redis_url",
    "cluster": "redis_cluster_url",
    "redis-tls": "redis_tls_url",
    "cluster-tls": "redis_tls_cluster_url",
}


def redis_location(request: pytest.FixtureRequest, backend: str) -> str:
    """The URL of the parametrized Redis backend: "redis" (one node), "cluster", and each over TLS ("-tls")."""
    return str(request.getfixturevalue(REDIS_BACKENDS[backend]))


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


@pytest.fixture(params=["fs", *REDIS_BACKENDS])
def backend(request: pytest.FixtureRequest) -> str:
    """The store suite's backends: the filesystem, one Redis node and a Redis Cluster, each of those also over TLS
    (with a client certificate): the same tests on every transport."""
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
            if backend.endswith("-tls"):
                # a TLS connect includes redis-py building a new SSL context for each new connection (it parses the
                # system's CA bundle: ~15 ms, but seconds on a machine loaded many times over), so the first puts of
                # six racing tasks can take longer than the 2 s default: these tests are about the store, not that
                kw.setdefault("connect_timeout_s", 15.0)
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
    """The MCP server over the session's Redis store (one jq worker; a 20 s query limit: its tests query megabytes
    copied out of Redis, and 3 s was too short for one on a loaded machine; none of them tests the limit)."""
    services = build_services(Settings(store=redis_url, jq_timeout_s=20.0, jq_workers=1))
    try:
        yield build_server(services)
    finally:
        await services.aclose()
