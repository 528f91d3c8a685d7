"""`stats` and `outputs` on a fresh install (a new HOME, the per-user store not created yet): nothing was stored,
which is no error (exit 0), and nothing is created by looking. An explicit store that does not exist stays an error
(tests/cli/test_stats.py, test_dispatch.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXE = str(Path(sys.executable).with_name("mcp-offload"))


@pytest.fixture
def fresh_home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_OFFLOAD_", "XDG_"))}
    return {**env, "HOME": str(home)}


def _run(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *argv], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL)


def _default_store(env: dict[str, str]) -> Path:
    return Path(env["HOME"]) / ".local" / "share" / "mcp-offload" / "store"


@pytest.mark.skipif(sys.platform != "linux", reason="the per-user data directory is spelled for Linux here")
@pytest.mark.parametrize("argv", [["stats"], ["outputs", "list"], ["outputs", "gc"], ["outputs", "clear", "--yes"]])
def test_before_anything_was_stored_the_commands_say_so_and_exit_0(fresh_home: dict[str, str], argv: list[str]) -> None:
    done = _run(fresh_home, *argv)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    store = _default_store(fresh_home)
    assert f"nothing stored yet (the per-user store {store} is created by the first offloaded output)" in done.stdout
    assert not store.exists() and not store.parent.exists()  # looking creates nothing


@pytest.mark.skipif(sys.platform != "linux", reason="the per-user data directory is spelled for Linux here")
def test_json_before_anything_was_stored_is_the_empty_stores_document(
    fresh_home: dict[str, str], tmp_path: Path
) -> None:
    listed = _run(fresh_home, "outputs", "list", "--json")
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    fresh = _run(fresh_home, "stats", "--json", "--days", "3")
    assert fresh.returncode == 0, fresh.stderr
    empty = tmp_path / "empty"
    (empty / "v1").mkdir(parents=True)
    created = _run(fresh_home, "stats", "--json", "--days", "3", "--store", str(empty))
    assert created.returncode == 0, created.stderr
    assert json.loads(fresh.stdout) == json.loads(created.stdout)
    assert not _default_store(fresh_home).exists()


@pytest.mark.skipif(sys.platform != "linux", reason="the per-user data directory is spelled for Linux here")
def test_showing_a_handle_before_anything_was_stored_still_fails(fresh_home: dict[str, str]) -> None:
    done = _run(fresh_home, "outputs", "show", "out_" + "a" * 26)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith("mcp-offload: no such output, nothing stored yet")


def test_an_explicit_store_that_does_not_exist_stays_an_error(fresh_home: dict[str, str], tmp_path: Path) -> None:
    typo = tmp_path / "typo"
    for argv in (["stats", "--store", str(typo)], ["outputs", "list", "--store", str(typo)]):
        done = _run(fresh_home, *argv)
        assert done.returncode == 1 and "the directory does not exist" in done.stderr
    env = {**fresh_home, "MCP_OFFLOAD_STORE": str(typo)}
    assert _run(env, "stats").returncode == 1 and not typo.exists()
