"""Isolation: each test process from the others (pytest-xdist workers, other suites on the machine), each test from
the next. Registered first by tests/conftest.py, so every test gets it without asking.

Per process (a worker, or the one process of a serial run), for the whole session:
- `TMPDIR` (and `tempfile.gettempdir()`) is a directory of its own under pytest's base temp, inherited by every child
  process: what a test or the code under test leaves in "the" temp directory is seen by no other worker.
- `XDG_CONFIG_HOME`, `XDG_DATA_HOME`, `XDG_STATE_HOME` point into it too: a server started without `--store` or
  `--config` uses a store, a log and a servers.json of this process's own (never the developer's).
- `MCP_OFFLOAD_INGEST_WORKERS_AT=first-big-output`: an HTTP service or gateway a test starts as a process starts
  its ingest workers at its first big output, as `wrap` starts its gateway (two idle workers cost ~2 s of CPU, and
  most tests' servers never see an output of 256 KiB). The tests of the launch default pass `--ingest-workers-at
  launch`.
- `REDIS_URL` names a database of its own on the shared server: gwN uses database N + 1 (N mod 15), so a test on
  the default key prefix never meets another worker's keys. (The Redis Cluster has database 0 only: see below.)
Per test: `os.environ` and the working directory are as they were before the test when the next one starts; a test
that changed either without `monkeypatch` fails, naming what it changed.
Per module: tests that share a module-, class- or package-scoped fixture run on one worker (an `xdist_group` named
after the module, for `--dist loadgroup`), so the fixture is built once as in a serial run.

The rules for a test author (the fixtures above do the rest):
- A port for a child process: `support.free_port()` (this worker's ports, below the ephemeral range). A server in the
  test process binds port 0 and reads its port back. Never a fixed port.
- Files: `tmp_path` / `tmp_path_factory`, or `tempfile` (private per worker). Never a fixed path under /tmp or HOME.
- Redis: the `redis_url` / `redis_cluster_url` / `shared_redis` fixtures, with a random key prefix (`make_store`
  does it) or a session/credential of the test's own; never FLUSHDB/FLUSHALL or a scan of the whole keyspace on the
  shared servers. A test that stops, kills or reconfigures Redis takes `private_redis` or `private_cluster`.
- Environment: `monkeypatch.setenv` / `monkeypatch.chdir`, or an `env=` for the child process.
- Wall-clock limits are bounds against hangs, not measurements: time a CPU-bound step in CPU time
  (`time.process_time()`), and give a child process a generous timeout (it shares two cores with other workers).
- A test that runs a real coding agent, client or proxy (npm/PyPI) is marked `real_agent` (module-level
  `pytestmark`): `.ci/run` runs those in a pytest session of their own, beside the rest (`MCP_OFFLOAD_TEST_SLOTS`
  keeps the two sessions' ports and Redis databases apart: support/ports.py). `support.agents.need`, `client_binary` and
  `start_litellm` fail an unmarked test. A test that must not run beside some other test names a shared
  `@pytest.mark.xdist_group("…")` (`--dist loadgroup` runs a group on one worker).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from support.ports import worker_index

INGEST_WORKERS_AT = "MCP_OFFLOAD_INGEST_WORKERS_AT"
OURS = {"PYTEST_CURRENT_TEST"}  # pytest's own, set per test phase
REDIS_DATABASES = 15  # gwN -> database 1 + N mod 15: within a default redis-server's 16, 0 left to serial runs


def worker_redis_url(url: str) -> str:
    """`url` (a single-node redis:// or rediss:// URL) on this worker's database; unchanged without xdist."""
    parts = urlsplit(url)
    if not os.environ.get("PYTEST_XDIST_WORKER") or parts.scheme not in ("redis", "rediss", "valkey", "valkeys"):
        return url
    return urlunsplit(parts._replace(path=f"/{1 + worker_index() % REDIS_DATABASES}"))


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("REDIS_URL"):
        os.environ["REDIS_URL"] = worker_redis_url(os.environ["REDIS_URL"])


SHARED_SCOPES = ("module", "class", "package")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of a module that share a module-, class- or package-scoped fixture run on one worker, as in a serial
    run, so that the fixture (a LiteLLM proxy takes ~40 s to start) is built once, not once per worker."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        if any(defs[-1].scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() if defs):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))


_current: list[pytest.Item] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current[:] = [item]


def require_marker(name: str, what: str) -> None:
    """Fail the running test unless it is marked `name`: the helpers that start `what` (a real agent, the LiteLLM
    proxy) call this, so a new test that runs one lands in the session .ci/run gives those tests."""
    if _current and _current[0].get_closest_marker(name) is None:
        pytest.fail(
            f"{_current[0].nodeid} runs {what}: mark it `@pytest.mark.{name}` (or `pytestmark = pytest.mark.{name}` "
            "for the module), which .ci/run runs in a pytest session of its own, once the agents are installed",
            pytrace=False,
        )


@pytest.fixture(autouse=True, scope="session")
def _ingest_workers_on_demand() -> Iterator[None]:
    saved = os.environ.get(INGEST_WORKERS_AT)
    os.environ[INGEST_WORKERS_AT] = "first-big-output"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(INGEST_WORKERS_AT, None)
        else:
            os.environ[INGEST_WORKERS_AT] = saved


@pytest.fixture(autouse=True, scope="session")
def _private_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("private", numbered=False)
    dirs = {name: root / name.lower() for name in ("TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")}
    saved = {name: os.environ.get(name) for name in dirs}
    for name, path in dirs.items():
        path.mkdir()
        os.environ[name] = str(path)
    tempfile.tempdir = None  # gettempdir() reads TMPDIR again
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        tempfile.tempdir = None


@pytest.fixture(autouse=True)
def _environment_restored(request: pytest.FixtureRequest) -> Iterator[None]:
    env, cwd = dict(os.environ), Path.cwd()
    yield
    changed = sorted(k for k in env.keys() | os.environ.keys() if env.get(k) != os.environ.get(k) and k not in OURS)
    moved = Path.cwd() != cwd
    if changed:
        os.environ.clear()
        os.environ.update(env)
    if moved:
        os.chdir(cwd)
    if changed or moved:
        what = ", ".join([*(f"${k}" for k in changed), *(["the working directory"] if moved else [])])
        pytest.fail(
            f"{request.node.nodeid} changed {what} and left it so: use monkeypatch.setenv/chdir or a child's env=",
            pytrace=False,
        )
