"""The command line as a new user types it, run as a subprocess: ports outside 1-65535 are refused in one line
before anything starts (70000 was bound as 70000 - 65536 = 4464), and options written before a subcommand's name
reach the subcommand (or are refused in one line naming it), not argparse's `invalid choice: 'outputs'`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from support import HANG_TIMEOUT_S

EXE = str(Path(sys.executable).with_name("mcp-offload"))


def _run(
    *argv: str, env: dict[str, str] | None = None, timeout: float = HANG_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [EXE, *argv], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, env=env
    )


def _nothing_listens_on(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


RANGE = "is out of range (1-65535)"


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--port", "70000", "--transport", "http"], f"mcp-offload: error: argument --port: port 70000 {RANGE}"),
        (["--port", "70000", "--transport", "sse"], f"mcp-offload: error: argument --port: port 70000 {RANGE}"),
        (["--port", "0", "--transport", "both"], f"mcp-offload: error: argument --port: port 0 {RANGE}"),
        (["--port", "-1", "--transport", "http"],
         "mcp-offload: error: argument --port: '-1' is not a port (a whole number 1-65535)"),
        (["gateway", "--port", "70000"], f"mcp-offload gateway: error: argument --port: port 70000 {RANGE}"),
        (["gateway", "--port", "65536"], f"mcp-offload gateway: error: argument --port: port 65536 {RANGE}"),
        (["gateway", "--anthropic-upstream", "http://127.0.0.1:70000"],
         f"mcp-offload gateway: error: argument --anthropic-upstream: port 70000 {RANGE}"),
        (["gateway", "--openai-upstream", "http://[::1]:99999/v1"],
         f"mcp-offload gateway: error: argument --openai-upstream: port 99999 {RANGE}"),
        (["gateway", "--gemini-upstream", "https://h:0"],
         f"mcp-offload gateway: error: argument --gemini-upstream: port 0 {RANGE}"),
    ],
)  # fmt: skip
def test_a_port_out_of_range_is_one_line_exit_2_and_nothing_listens(argv: list[str], line: str) -> None:
    done = _run(*argv)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [line + f" (see {line.split(': error')[0]} --help)"]
    assert done.stdout == ""
    assert _nothing_listens_on(70000 - 65536)


def test_a_port_in_an_environment_variable_is_checked_too() -> None:
    env = {**os.environ, "MCP_OFFLOAD_OPENAI_UPSTREAM": "http://127.0.0.1:70000/v1"}
    done = _run("gateway", "--port", "1", env=env)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "argument --openai-upstream: port 70000 is out of range" in done.stderr


def test_a_port_in_a_proxied_servers_url_is_checked(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": {"api": {"url": "http://127.0.0.1:70000/mcp"}}}))
    done = _run("--config", str(config), "--store", str(tmp_path / "store"))
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "port 70000 is out of range (1-65535)" in done.stderr and "api" in done.stderr
    assert not (tmp_path / "store").exists()


def test_options_before_the_subcommand_reach_it(tmp_path: Path) -> None:
    store = tmp_path / "store"
    (store / "v1").mkdir(parents=True)
    for argv in (
        ["--store", str(store), "outputs", "list"],
        [f"--store={store}", "outputs", "list", "--json"],
        ["--store", str(store), "stats", "--days", "2"],
    ):
        done = _run(*argv)
        assert done.returncode == 0, (argv, done.stderr)
        assert "invalid choice" not in done.stderr
    assert _run("--store", str(store), "outputs", "list", "--json").stdout.strip() == "[]"
    assert "No savings recorded in the last 2 day(s)." in _run("--store", str(store), "stats", "--days", "2").stdout


def test_an_option_before_a_subcommand_that_it_does_not_take_is_one_clear_line(tmp_path: Path) -> None:
    for argv, option, command in (
        (["--transport", "http", "outputs", "list"], "--transport", "outputs"),
        (["--store", str(tmp_path), "import-config"], "--store", "import-config"),
        (["--stateless", "stats"], "--stateless", "stats"),
    ):
        done = _run(*argv)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines() == [
            f"mcp-offload: error: {option} does not apply to `{command}`; its options follow its name "
            f"(see mcp-offload {command} --help)"
        ]


def test_a_redis_store_before_the_subcommand_is_used_by_it() -> None:
    """The issue's command: the store is unreachable, and the answer says so (not `invalid choice`)."""
    done = _run("--store", "redis://127.0.0.1:1/0", "outputs", "list")
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1].startswith("mcp-offload: the shared output store (Redis) is unreachable")


@pytest.mark.parametrize(
    ("store", "port"),
    [
        ("redis://127.0.0.1:0/0", 0),  # redis-py took port 0 for its default 6379
        ("redis://:s3cret@127.0.0.1:70000/0", 70000),
        ("redis+cluster://127.0.0.1:7000,127.0.0.1:99999", 99999),
    ],
)
def test_a_port_out_of_range_in_the_store_url_is_one_line_exit_2(store: str, port: int) -> None:
    line = f"port {port} is out of range (1-65535); nothing was started"
    for argv in (["--store", store, "--transport", "http", "--port", "1"], ["outputs", "list", "--store", store]):
        done = _run(*argv)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.splitlines() == [f"mcp-offload: the store location names a port out of range: {line}"]
    env = {**os.environ, "MCP_OFFLOAD_STORE": store}
    done = _run("stats", env=env)
    assert done.returncode == 2 and done.stderr.splitlines()[-1].endswith(line)
    assert "s3cret" not in done.stderr  # the message names the port, not the URL with its password


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_bad_store_location_is_refused_before_the_server_is_imported(transport: str) -> None:
    """The refusal comes first: the MCP SDK and the server cost about a second of CPU to import, for nothing."""
    argv = ["--store", "redis://127.0.0.1:70000/0", "--transport", transport]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mcp_offload", *argv],
        capture_output=True,
        text=True,
        timeout=HANG_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "mcp_offload.cli.dispatch" in imported  # the trace is there
    assert not {name for name in imported if name == "mcp" or name.startswith("mcp_offload.mcp_server")}
    assert done.stderr.splitlines()[-1].endswith("port 70000 is out of range (1-65535); nothing was started")


def test_a_store_that_cannot_work_is_refused_before_the_server_is_imported(redis_url: str) -> None:
    """A TLS URL to a plain Redis port: the stdio server opens (and checks) the store before it imports the MCP
    server, so the one-line refusal costs no second of CPU for an import it will not use."""
    plain = redis_url.split("://", 1)[1].split("/", 1)[0]
    script = (
        "import sys\n"
        "from mcp_offload.cli import dispatch\n"
        "try:\n"
        f"    dispatch.main(['--store', 'rediss://{plain}/0'])\n"
        "except SystemExit as exc:\n"
        "    print('exit', exc.code, 'mcp' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=HANG_TIMEOUT_S, stdin=subprocess.DEVNULL
    )
    assert done.stdout.splitlines() == ["exit 1 False"], done.stderr[-2000:]
    assert done.stderr.splitlines()[-1].endswith("did not answer the TLS handshake, as a plain (non-TLS) port does: "
                                                  "use redis:// for a plain port")  # fmt: skip
