"""The parallel-safe harness (tests/support/isolation.py, tests/support/ports.py), run on small suites of its own."""

from __future__ import annotations

import os
import tempfile
import textwrap
from pathlib import Path

import pytest

from support import ports
from support.isolation import worker_redis_url

PLUGIN = 'pytest_plugins = ["support.isolation"]\n'
ARGS = ("-p", "no:cacheprovider", "-p", "no:asyncio")  # the small suites need neither


def test_a_test_that_leaves_the_environment_changed_fails_and_the_next_one_sees_it_restored(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(
        """
        import os

        def test_leaks():
            os.environ["MCP_OFFLOAD_LEAKED"] = "1"

        def test_moves(tmp_path):
            os.chdir(tmp_path)

        def test_sees_neither():
            assert "MCP_OFFLOAD_LEAKED" not in os.environ

        def test_monkeypatch_is_fine(monkeypatch, tmp_path):
            monkeypatch.setenv("MCP_OFFLOAD_LEAKED", "2")
            monkeypatch.chdir(tmp_path)
        """
    )
    cwd = Path.cwd()
    result = pytester.runpytest_inprocess(*ARGS)
    os.chdir(cwd)
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(["*test_leaks changed $MCP_OFFLOAD_LEAKED and left it so*"])
    result.stdout.fnmatch_lines(["*test_moves changed the working directory and left it so*"])


def test_each_session_has_its_own_temp_and_xdg_directories(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(
        """
        import os, tempfile

        def test_private(tmp_path_factory):
            base = str(tmp_path_factory.getbasetemp())
            assert tempfile.gettempdir().startswith(base) and os.environ["TMPDIR"] == tempfile.gettempdir()
            for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
                assert os.environ[name].startswith(base)
        """
    )
    before = tempfile.gettempdir()
    pytester.runpytest_inprocess(*ARGS).assert_outcomes(passed=1)
    assert tempfile.gettempdir() == before  # put back after the session


def test_a_module_sharing_a_module_scoped_fixture_runs_on_one_worker(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(
        test_shared="""
        import pytest

        @pytest.fixture(scope="module")
        def expensive():
            return 1

        def test_a(expensive): pass
        def test_b(expensive): pass
        def test_c(): pass
        """
    )
    items, _ = pytester.inline_genitems(*ARGS)
    groups = {item.name: item.get_closest_marker("xdist_group") for item in items}
    assert groups["test_a"] is not None and groups["test_a"].args == ("test_shared.py",)
    assert groups["test_b"] is not None and groups["test_b"].args == ("test_shared.py",)
    assert groups["test_c"] is None  # free to go to any worker


def test_pytest_xdist_runs_each_such_module_on_one_worker_for_real(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The groups are honoured by the pytest and pytest-xdist installed, not only marked: pytest 9.2 with xdist 3.8
    distributed a group's tests one by one (pytest-dev/pytest-xdist#1386), and every worker that got one of them
    built the module's fixture again (a LiteLLM proxy is ~13 s of CPU)."""
    pytester.makeconftest(PLUGIN)
    module = textwrap.dedent("""
        import os
        import pytest

        @pytest.fixture(scope="module")
        def expensive():
            with open(os.environ["BUILT_LOG"], "a") as log:
                log.write(f"{__name__} {os.environ['PYTEST_XDIST_WORKER']}\\n")

        @pytest.mark.parametrize("i", range(6))
        def test_shared(expensive, i): pass
        """)
    pytester.makepyfile(test_one=module, test_two=module)
    built = tmp_path / "built.log"
    monkeypatch.setenv("BUILT_LOG", str(built))
    tests_dir = str(Path(__file__).parents[1])  # the small suite's conftest imports support.isolation
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess(*ARGS, "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=12)
    lines = built.read_text().splitlines()
    assert sorted(line.split()[0] for line in lines) == ["test_one", "test_two"], lines  # each built once


def test_a_test_starting_a_real_agent_must_be_marked(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PLUGIN)
    pytester.makepyfile(
        """
        import pytest
        from support.isolation import require_marker

        def test_unmarked():
            require_marker("real_agent", "the real agent x")

        @pytest.mark.real_agent
        def test_marked():
            require_marker("real_agent", "the real agent x")
        """
    )
    result = pytester.runpytest_inprocess(*ARGS)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_unmarked runs the real agent x: mark it `@pytest.mark.real_agent`*"])


@pytest.mark.parametrize(("worker", "count"), [("gw0", "3"), ("gw1", "3"), ("gw2", "3"), ("gw0", "1")])
def test_workers_get_disjoint_port_slices_below_the_ephemeral_range(
    monkeypatch: pytest.MonkeyPatch, worker: str, count: str
) -> None:
    monkeypatch.delenv(ports.SLOTS_VARIABLE, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
    mine = ports._slice()
    others = [ports._slice_of(n, int(count)) for n in range(int(count)) if f"gw{n}" != worker]
    assert all(set(mine).isdisjoint(other) for other in others)
    assert mine.start >= ports.LOW and mine.stop + ports.BUS_OFFSET <= 32768  # bus ports too, below Linux's range
    assert len(mine) >= 3000


def test_two_sessions_at_once_get_disjoint_slices_and_databases(monkeypatch: pytest.MonkeyPatch) -> None:
    """.ci/run's two sessions (3 workers as slots 0-2 of 5, the real agents' 2 as slots 3 and 4) share no port slice
    and no Redis database."""
    seen: list[tuple[range, str]] = []
    for slots, count in (("0/5", "3"), ("3/5", "2")):
        monkeypatch.setenv(ports.SLOTS_VARIABLE, slots)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", count)
        for n in range(int(count)):
            monkeypatch.setenv("PYTEST_XDIST_WORKER", f"gw{n}")
            seen.append((ports._slice(), worker_redis_url("redis://127.0.0.1:6379/0")))
    assert len({url for _, url in seen}) == 5
    for i, (mine, _) in enumerate(seen):
        assert all(set(mine).isdisjoint(other) for j, (other, _) in enumerate(seen) if j != i)
        assert mine.start >= ports.LOW and mine.stop + ports.BUS_OFFSET <= 32768


def test_free_ports_are_free_distinct_and_have_a_free_bus_port() -> None:
    handed = [ports.free_port(with_bus=True) for _ in range(20)]
    assert len(set(handed)) == 20
    assert all(ports.LOW <= port < ports.HIGH for port in handed)


@pytest.mark.parametrize(
    ("url", "worker", "expected"),
    [
        ("redis://127.0.0.1:6379/0", "gw0", "redis://127.0.0.1:6379/1"),
        ("redis://:secret@127.0.0.1:6379/0", "gw3", "redis://:secret@127.0.0.1:6379/4"),
        ("redis://127.0.0.1:6379", "gw15", "redis://127.0.0.1:6379/1"),
        ("redis+cluster://127.0.0.1:7000,127.0.0.1:7001", "gw1", "redis+cluster://127.0.0.1:7000,127.0.0.1:7001"),
        ("redis://127.0.0.1:6379/0", "", "redis://127.0.0.1:6379/0"),  # serial: as given
    ],
)
def test_each_worker_has_its_own_redis_database(
    monkeypatch: pytest.MonkeyPatch, url: str, worker: str, expected: str
) -> None:
    monkeypatch.delenv(ports.SLOTS_VARIABLE, raising=False)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    assert worker_redis_url(url) == expected
