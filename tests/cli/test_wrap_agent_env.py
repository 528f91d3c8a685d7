"""What `mcp-offload wrap` gives each agent, as a process: `--print-env` for every agent in the registry (the exact
variables, arguments and files), the configuration files written under mcp-offload's own data directory with the
user's own settings kept, and an agent version whose configuration format wrap does not know refused in one line.
(The real agents through wrap: tests/gateway/test_wrap_agents.py and test_wrap_more_agents.py.)"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_offload.cli.wrap.agents import AGENTS
from support import free_port
from support.wrap import WRAP, changed, snapshot, wrap_env

OWN = ".local/share/mcp-offload"
HUB_PORT = re.compile(r"(?<=CLINE_HUB_PORT=)\d+|(?<=/hubs/)\d+(?=/)")


def print_env(home: Path, port: int, agent: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WRAP, "--port", str(port), "--print-env", agent], env={**wrap_env(home), **env},
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def claude(home: Path, gw: str) -> list[str]:
    return [f"export ANTHROPIC_BASE_URL={gw}"]


def codex(home: Path, gw: str) -> list[str]:
    overrides = ["-c 'model_provider=\"mcp-offload\"'", "-c 'model_providers.mcp-offload.name=\"mcp-offload\"'",
                 f"-c 'model_providers.mcp-offload.base_url=\"{gw}/v1\"'",
                 "-c 'model_providers.mcp-offload.wire_api=\"responses\"'",
                 "-c 'model_providers.mcp-offload.env_key=\"OPENAI_API_KEY\"'"]  # fmt: skip
    return ["# Codex CLI takes command-line arguments, not only variables: run it as", f"codex {' '.join(overrides)} …"]


def gemini(home: Path, gw: str) -> list[str]:
    own = home / OWN / "gemini-cli"
    return [
        f"export GOOGLE_GEMINI_BASE_URL={gw}",
        f"export GEMINI_CLI_HOME={own}",
        f"# wrote {own}/.gemini/settings.json",
    ]


def pi(home: Path, gw: str) -> list[str]:
    own = home / OWN / "pi" / "agent"
    sessions = home / ".pi" / "agent" / "sessions"
    return [f"export PI_CODING_AGENT_DIR={own}", f"export PI_CODING_AGENT_SESSION_DIR={sessions}",
            f"# wrote {own}/models.json"]  # fmt: skip


def opencode(home: Path, gw: str) -> list[str]:
    providers = {"anthropic": f"{gw}/v1", "openai": f"{gw}/v1", "google": f"{gw}/v1beta"}
    config = {"provider": {name: {"options": {"baseURL": url}} for name, url in providers.items()}}
    return [f"export OPENCODE_CONFIG_CONTENT='{json.dumps(config, separators=(',', ':'))}'"]


def copilot(home: Path, gw: str) -> list[str]:
    return [f"export COPILOT_PROVIDER_BASE_URL={gw}/v1"]  # a provider of the user's own, type openai (its default)


def cline(home: Path, gw: str) -> list[str]:
    copy = home / OWN / "cline" / "providers.json"
    hub = home / OWN / "cline" / "hubs" / "PORT" / "hub.json"  # a hub of its own, on a free port (PORT)
    return [f"export CLINE_PROVIDER_SETTINGS_PATH={copy}", f"export CLINE_HUB_DISCOVERY_PATH={hub}",
            "export CLINE_HUB_PORT=PORT", f"# wrote {copy}"]  # fmt: skip


def openclaw(home: Path, gw: str) -> list[str]:
    own = home / OWN / "openclaw" / gw.rsplit(":", 1)[1] / "openclaw.json"  # one per gateway
    return [f"export OPENCLAW_CONFIG_PATH={own}", f"# wrote {own}"]


def qwen(home: Path, gw: str) -> list[str]:
    return [f"export OPENAI_BASE_URL={gw}/v1", f"export ANTHROPIC_BASE_URL={gw}", f"export GOOGLE_GEMINI_BASE_URL={gw}"]


def aider(home: Path, gw: str) -> list[str]:
    return [f"export OPENAI_BASE_URL={gw}/v1", f"export OPENAI_API_BASE={gw}/v1", f"export ANTHROPIC_API_BASE={gw}",
            f"export ANTHROPIC_BASE_URL={gw}"]  # fmt: skip


# what `--print-env` prints for each agent of the registry, with no settings of the user's (an agent added to the
# registry adds its line here)
EXPECTED: dict[str, Callable[[Path, str], list[str]]] = {
    "claude": claude, "codex": codex, "gemini": gemini, "pi": pi, "opencode": opencode, "copilot": copilot,
    "cline": cline, "qwen": qwen, "aider": aider, "openclaw": openclaw,
}  # fmt: skip
# what some agents need of the user's before wrap can point them: a provider of their own
USERS_ENV = {"copilot": {"COPILOT_PROVIDER_API_KEY": "sk-user-key"}}
CLINE_PROVIDER = {"provider": "openai-compatible", "apiKey": "sk-user", "model": "m"}
CLINE_FILE = {"version": 1, "lastUsedProvider": "openai-compatible",
              "providers": {"openai-compatible": {"settings": CLINE_PROVIDER}}}  # fmt: skip
USERS_FILES = {"cline": {".cline/data/settings/providers.json": json.dumps(CLINE_FILE)}}


def test_every_agent_has_its_expected_output() -> None:
    assert set(AGENTS) == set(EXPECTED)


@pytest.mark.parametrize("agent", list(AGENTS))
def test_print_env_gives_each_agent_what_points_it_and_runs_nothing(agent: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for name, text in USERS_FILES.get(agent, {}).items():
        (home / name).parent.mkdir(parents=True)
        (home / name).write_text(text)
    before = snapshot(home)
    port = free_port()
    done = print_env(home, port, agent, **USERS_ENV.get(agent, {}))
    assert done.returncode == 0, done.stderr
    printed = HUB_PORT.sub("PORT", done.stdout)  # Cline's hub port: a free one, chosen when printed
    assert printed.splitlines() == EXPECTED[agent](home, f"http://127.0.0.1:{port}")
    assert done.stderr.startswith(f"mcp-offload wrap: no mcp-offload gateway answers on http://127.0.0.1:{port}")
    assert not (home / ".local/state").exists() and not (home / OWN / "store").exists(), "something was started"
    outside = [p for p in changed(before, snapshot(home)) if not p.startswith(OWN + "/")]
    assert not outside, f"wrap wrote outside its own data directory: {outside}"


def test_pi_gets_the_users_models_and_the_rest_of_its_directory(tmp_path: Path) -> None:
    """The user's own providers and settings are kept; the built-in providers go through the gateway with the
    user's other keys of them; nothing in ~/.pi/agent is written."""
    home = tmp_path / "home"
    user = home / ".pi" / "agent"
    user.mkdir(parents=True)
    ollama = {"baseUrl": "http://localhost:11434/v1", "api": "openai-completions", "apiKey": "ollama",
              "models": [{"id": "llama3.1:8b"}]}  # fmt: skip
    models = {"providers": {"ollama": ollama, "anthropic": {"headers": {"x-team": "blue"}, "baseUrl": "https://p.ex"}}}
    (user / "models.json").write_text(json.dumps(models))
    (user / "settings.json").write_text('{"defaultThinkingLevel": "off"}')
    before = {p: p.read_bytes() for p in user.iterdir()}
    port = free_port()
    assert print_env(home, port, "pi").returncode == 0
    own = home / OWN / "pi" / "agent"
    written = json.loads((own / "models.json").read_text())["providers"]
    gw = f"http://127.0.0.1:{port}"
    assert written["ollama"] == models["providers"]["ollama"]
    assert written["anthropic"] == {"headers": {"x-team": "blue"}, "baseUrl": gw}
    assert written["openai"] == {"baseUrl": f"{gw}/v1"} and written["google"] == {"baseUrl": f"{gw}/v1beta"}
    assert (own / "settings.json").is_symlink() and (own / "settings.json").resolve() == user / "settings.json"
    assert {p: p.read_bytes() for p in user.iterdir()} == before
    custom = print_env(home, port, "pi", PI_CODING_AGENT_SESSION_DIR=str(tmp_path / "sessions"))
    assert f"export PI_CODING_AGENT_SESSION_DIR={tmp_path / 'sessions'}" in custom.stdout.splitlines()


def test_opencode_keeps_the_users_inline_config(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    port = free_port()
    mine = {"model": "anthropic/claude-sonnet-4-5", "provider": {"anthropic": {"options": {"timeout": 5}}}}
    done = print_env(home, port, "opencode", OPENCODE_CONFIG_CONTENT=json.dumps(mine))
    line = done.stdout.strip().removeprefix("export OPENCODE_CONFIG_CONTENT=")
    config = json.loads(line.strip("'"))
    assert config["model"] == mine["model"]
    assert config["provider"]["anthropic"] == {"options": {"timeout": 5, "baseURL": f"http://127.0.0.1:{port}/v1"}}


BAD_SETTINGS = [
    ("pi", ".pi/agent/models.json", '{"providers": {}, // a comment\n}', "cannot read", "as JSON; wrap reads it as "
     "plain JSON (no comments, no trailing commas), or run pi without wrap"),
    ("pi", ".pi/agent/models.json", "[1, 2]", "is not a JSON object", "or run pi without wrap"),
]  # fmt: skip


@pytest.mark.parametrize(("agent", "name", "text", "says", "then"), BAD_SETTINGS)
def test_settings_wrap_cannot_read_are_refused_in_one_line(
    agent: str, name: str, text: str, says: str, then: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    (home / name).parent.mkdir(parents=True)
    (home / name).write_text(text)
    done = print_env(home, free_port(), agent)
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 2 and done.stdout == "" and says in last and last.endswith(then), done.stderr
    assert (home / name).read_text() == text


def test_an_inline_opencode_config_that_is_not_json_is_refused(tmp_path: Path) -> None:
    done = print_env(tmp_path, free_port(), "opencode", OPENCODE_CONFIG_CONTENT="{not json")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[-1] == (
        "mcp-offload wrap: OPENCODE_CONFIG_CONTENT is not a JSON object; wrap adds its providers to it: unset it or "
        "fix it"
    )


def fake_npm_agent(root: Path, package: str, binary: str, version: str) -> Path:
    """An npm-installed agent as `npm install` lays it out: node_modules/<package>/package.json and a .bin link."""
    pkg = root / "node_modules" / package
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"name": package, "version": version}))
    (pkg / "cli.js").write_text('#!/bin/sh\necho ran > "$HOME/ran"\n')
    (pkg / "cli.js").chmod(0o755)
    bin_dir = root / "node_modules" / ".bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / binary).symlink_to(pkg / "cli.js")
    return bin_dir


@pytest.mark.parametrize(("agent", "package", "version", "knows"), [
    ("pi", "@mariozechner/pi-coding-agent", "1.2.0", "0.71.0 up to (not including) 1.0.0; tested with 0.73.1"),
    ("pi", "@mariozechner/pi-coding-agent", "0.60.2", "0.71.0 up to (not including) 1.0.0; tested with 0.73.1"),
    ("opencode", "opencode-ai", "2.0.1", "1.0.0 up to (not including) 2.0.0; tested with 1.18.33"),
    ("openclaw", "openclaw", "2026.8.3", "2026.9.0 up to (not including) 2027.0.0; tested with 2026.9.6"),
])  # fmt: skip
def test_a_version_whose_configuration_wrap_does_not_know_is_refused(
    agent: str, package: str, version: str, knows: str, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = fake_npm_agent(tmp_path, package, agent, version)
    env = {**wrap_env(home), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run([*WRAP, agent, "-p", "hi"], env=env, capture_output=True, text=True, timeout=60)
    title = AGENTS[agent].title
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr == (
        f"mcp-offload wrap: {title} {version} is not a version whose configuration format wrap knows ({knows}); "
        "install that version or point it yourself\n"
    )
    assert not (home / "ran").exists() and not (home / ".local").exists(), "something was run, started or written"


def test_a_known_version_runs(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    bin_dir = fake_npm_agent(tmp_path, "@mariozechner/pi-coding-agent", "pi", "0.73.1")
    env = {**wrap_env(home), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    done = subprocess.run([*WRAP, "pi"], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (home / "ran").read_text() == "ran\n"


@pytest.mark.parametrize("agent", list(AGENTS))
def test_a_missing_agent_names_its_package(agent: str, tmp_path: Path) -> None:
    done = subprocess.run([*WRAP, agent], env={**wrap_env(tmp_path), "PATH": str(tmp_path)}, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    install = AGENTS[agent].install
    assert install is not None
    assert done.returncode == 2 and done.stderr == (
        f"mcp-offload wrap: {AGENTS[agent].executable!r} is not an executable on PATH (install it: "
        f"{install.command()})\n"
    )


@pytest.mark.parametrize(("agent", "variable", "user_file"), [
    ("pi", "PI_CODING_AGENT_DIR", ".pi/agent/settings.json"),
    ("gemini", "GEMINI_CLI_HOME", ".gemini/GEMINI.md"),
])  # fmt: skip
def test_wraps_own_directory_in_the_variable_is_not_taken_for_the_users(
    agent: str, variable: str, user_file: str, tmp_path: Path
) -> None:
    """After `eval "$(mcp-offload wrap --print-env pi)"` the variable names wrap's own directory: a second run still
    links the user's own files (it would link the directory's entries to themselves)."""
    home = tmp_path / "home"
    (home / user_file).parent.mkdir(parents=True)
    (home / user_file).write_text("the user's")
    port = free_port()
    first = print_env(home, port, agent)
    exported = dict(line.removeprefix("export ").split("=", 1) for line in first.stdout.splitlines() if "=" in line)
    second = print_env(home, port, agent, **{variable: exported[variable]})
    assert second.returncode == 0 and second.stdout == first.stdout, second.stderr
    linked = Path(exported[variable]) / Path(user_file).name if agent == "pi" else Path(exported[variable]) / user_file
    assert linked.is_symlink() and linked.read_text() == "the user's"
