"""`mcp-offload wrap` as a user runs it, as a process: the variables it gives, the exit status, stdin/stdout and signals
passed through, a running gateway reused, one started for the duration and stopped after, and bad input refused in
one line with exit 2 and nothing started. (The real agents through wrap: tests/gateway/test_wrap_agents.py.)"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_upstream import UpstreamServer
from mcp_offload.cli.wrap.agents import AGENTS
from mcp_offload.cli.wrap.agents.base import agent_upstreams
from support import free_port
from support.gateway_process import gateway_process
from support.wrap import WRAP, wrap_env

USES = re.compile(r"^mcp-offload wrap: \S+ uses the gateway at (http://127\.0\.0\.1:\d+) \((.*)\)$")


def wrap(home: Path, *argv: str, stdin: str = "", timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*WRAP, *argv], env=wrap_env(home), input=stdin, capture_output=True, text=True, timeout=timeout
    )


def gateway_line(stderr: str) -> tuple[str, str]:
    found = [m for m in map(USES.match, stderr.splitlines()) if m]
    assert len(found) == 1, stderr
    return found[0].group(1), found[0].group(2)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_the_agent_gets_the_variables_stdin_stdout_and_its_exit_status(home: Path) -> None:
    script = "import os, sys; print(os.environ['OPENAI_BASE_URL'], sys.stdin.read().upper()); sys.exit(7)"
    done = wrap(home, "--api", "openai", "--", sys.executable, "-c", script, stdin="piped in")
    assert done.returncode == 7, done.stderr
    base, how = gateway_line(done.stderr)
    assert done.stdout == f"{base}/v1 PIPED IN\n"
    assert how.startswith("started for this run; store ") and str(home / ".local/share/mcp-offload/store") in how
    assert probe_closed(base), "the gateway started for the run is still up after it"


def probe_closed(base: str) -> bool:
    port = int(base.rsplit(":", 1)[1])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except OSError:
        return True


def test_a_running_gateway_is_reused(home: Path, tmp_path: Path, llm_upstream: UpstreamServer) -> None:
    with gateway_process(tmp_path / "store", llm_upstream.base_url, llm_upstream.openai_url, tmp_path / "gw.log") as gw:
        port = gw.rsplit(":", 1)[1]
        script = "import os; print(os.environ['ANTHROPIC_BASE_URL'])"
        done = wrap(home, "--port", port, "--api", "anthropic", "--", sys.executable, "-c", script)
        assert done.returncode == 0, done.stderr
        assert gateway_line(done.stderr) == (gw, "already running") and done.stdout.strip() == gw
        assert not probe_closed(gw), "wrap stopped a gateway it did not start"
    assert not (home / ".local/state/mcp-offload").exists(), "a gateway was started although one was running"


SIGNAL_CHILD = """
import pathlib, signal, sys, time
def stop(signum, frame):
    pathlib.Path(sys.argv[1]).write_text(str(signum))
    sys.exit(42)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGHUP, stop)
signal.signal(signal.SIGINT, stop)
pathlib.Path(sys.argv[2]).write_text("ready")
time.sleep(60)
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_signals_reach_the_agent_and_its_status_comes_back(home: Path, tmp_path: Path, signum: int) -> None:
    """Sent to wrap alone (its own session, no terminal: a SIGINT did not reach the agent from a terminal)."""
    got, ready = tmp_path / "got", tmp_path / "ready"
    argv = [*WRAP, "--api", "anthropic", "--", sys.executable, "-c", SIGNAL_CHILD, str(got), str(ready)]
    proc = subprocess.Popen(argv, env=wrap_env(home), stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "the agent did not start"
            time.sleep(0.05)
        proc.send_signal(signum)
        assert proc.wait(30) == 42
        assert got.read_text() == str(int(signum))
        assert proc.stderr is not None
        base, _ = gateway_line(proc.stderr.read())
        assert probe_closed(base)
    finally:
        proc.kill()
        proc.wait()


def test_an_agent_killed_by_a_signal_kills_wrap_with_it(home: Path) -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    done = wrap(home, "--api", "gemini", "--", sys.executable, "-c", script)
    assert done.returncode == -signal.SIGTERM, done.stderr


def test_print_env_prints_the_variables_and_runs_nothing(home: Path) -> None:
    port = str(free_port())
    claude = wrap(home, "--port", port, "--print-env", "claude")
    assert claude.returncode == 0 and claude.stdout == f"export ANTHROPIC_BASE_URL=http://127.0.0.1:{port}\n"
    assert f"no mcp-offload gateway answers on http://127.0.0.1:{port}" in claude.stderr
    any_openai = wrap(home, "--port", port, "--print-env", "--api", "openai", "--", "my-agent")
    assert any_openai.stdout == f"export OPENAI_BASE_URL=http://127.0.0.1:{port}/v1\n"
    (home / ".gemini").mkdir()
    (home / ".gemini" / "GEMINI.md").write_text("the user's memory")
    gemini = wrap(home, "--port", port, "--print-env", "gemini")
    own_home = home / ".local/share/mcp-offload/gemini-cli"
    assert gemini.stdout.splitlines() == [
        f"export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:{port}",
        f"export GEMINI_CLI_HOME={own_home}",
        f"# wrote {own_home}/.gemini/settings.json",
    ]
    assert json.loads((own_home / ".gemini/settings.json").read_text())["security"]["auth"] == {
        "selectedType": "gemini-api-key"
    }
    assert (own_home / ".gemini/GEMINI.md").read_text() == "the user's memory"  # the rest of ~/.gemini, linked
    assert sorted(p.name for p in (home / ".gemini").iterdir()) == ["GEMINI.md"]  # nothing written there
    (home / ".gemini" / "settings.json").write_text('{"security": {"auth": {"selectedType": "gemini-api-key"}}}')
    selected = wrap(home, "--port", port, "--print-env", "gemini")  # the user's own settings select one already
    assert selected.stdout == f"export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:{port}\n"
    codex = wrap(home, "--port", port, "--print-env", "codex")
    assert f"-c 'model_providers.mcp-offload.base_url=\"http://127.0.0.1:{port}/v1\"'" in codex.stdout
    assert "-c 'model_provider=\"mcp-offload\"'" in codex.stdout
    assert not (home / ".local/state").exists() and not (home / ".local/share/mcp-offload/store").exists()


def test_list_shows_every_agent_the_api_it_speaks_and_how_it_is_pointed(home: Path) -> None:
    done = wrap(home, "--list")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 3 * len(AGENTS) + 1 and lines[-1].startswith("any other agent: mcp-offload wrap --api ")
    for index, agent in enumerate(AGENTS.values()):
        first, pointed, install = lines[3 * index : 3 * index + 3]
        assert first.split(maxsplit=1) == [agent.name, f"{agent.title}: {', '.join(a.title for a in agent.apis)}"]
        assert pointed.strip() == f"pointed by {agent.pointed_by}"
        assert agent.install is not None and install.strip() == f"install: {agent.install.command()}"
    assert not (home / ".local").exists()


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port held by something that is not a gateway (it accepts and closes)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


BAD = [
    (["cursor"], f"unknown agent 'cursor' (known: {', '.join(AGENTS)})"),
    (["--api", "openai", "--", "no-such-agent-here"], "'no-such-agent-here' is not an executable on PATH"),
    (["--api", "openai"], "the following arguments are required: agent"),
    (["--api", "cobol", "--", "true"], "--api: unknown LLM API 'cobol': use one of anthropic, openai_chat (openai"),
    (["--port", "70000", "claude"], "argument --port"),
]


@pytest.mark.parametrize(("argv", "message"), BAD)
def test_bad_input_is_one_line_and_starts_nothing(home: Path, argv: list[str], message: str) -> None:
    done = wrap(home, *argv)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (home / ".local").exists(), "something was started or written"


def test_a_missing_agent_says_how_to_install_it(home: Path) -> None:
    done = subprocess.run([*WRAP, "gemini"], env={**wrap_env(home), "PATH": str(home)}, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "'gemini' is not an executable on PATH (install it: npm install -g @google/gemini-cli)" in done.stderr


def test_a_busy_port_is_refused(home: Path, busy_port: int) -> None:
    done = wrap(home, "--port", str(busy_port), "--api", "anthropic", "--", "true")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"port {busy_port} is in use by something that is not an mcp-offload gateway" in done.stderr
    assert not (home / ".local").exists()


def test_claude_keeps_the_cloud_the_user_selected() -> None:
    """CLAUDE_CODE_USE_BEDROCK / _VERTEX: Claude Code is pointed at the gateway's route for that cloud (its own
    variable for it), nothing else is set, and a base URL the user had set becomes the gateway's upstream."""
    claude = AGENTS["claude"]
    gateway, data = "http://127.0.0.1:9", Path("/nonexistent")
    bedrock = {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "eu-west-1"}
    assert claude.launch(gateway, data, bedrock).env == {"ANTHROPIC_BEDROCK_BASE_URL": gateway}
    vertex = {"CLAUDE_CODE_USE_VERTEX": "true", "CLOUD_ML_REGION": "us-east5"}
    assert claude.launch(gateway, data, vertex).env == {"ANTHROPIC_VERTEX_BASE_URL": gateway + "/v1"}
    assert claude.launch(gateway, data, {"CLAUDE_CODE_USE_BEDROCK": "0"}).env == {"ANTHROPIC_BASE_URL": gateway}
    assert agent_upstreams(claude, {**bedrock, "ANTHROPIC_BEDROCK_BASE_URL": "https://vpce.example/"}) == {
        "bedrock_upstream": "https://vpce.example"
    }
    assert agent_upstreams(claude, {**vertex, "ANTHROPIC_VERTEX_BASE_URL": "https://psc.example/v1"}) == {
        "vertex_upstream": "https://psc.example"
    }
    assert agent_upstreams(claude, {"ANTHROPIC_BEDROCK_BASE_URL": "https://vpce.example"}) == {}  # not selected
