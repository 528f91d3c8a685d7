"""`mcp-offload wrap copilot` as a process: Copilot CLI is pointed by COPILOT_PROVIDER_BASE_URL for a provider of the
user's own (its type decides the path), a base URL the user set becomes the upstream of the gateway, and what the
gateway cannot serve is refused in one line with nothing started. (The real Copilot CLI through wrap:
tests/gateway/test_wrap_agents.py.)"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support import free_port
from support.wrap import WRAP, wrap_env

KEY = {"COPILOT_PROVIDER_API_KEY": "sk-user-key"}


def wrap(home: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in wrap_env(home).items() if not k.startswith("COPILOT_")}
    return subprocess.run([*WRAP, *argv], env={**clean, **env}, capture_output=True, text=True, timeout=60)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    return home


def test_print_env_points_each_provider_type(home: Path) -> None:
    port = free_port()
    openai = wrap(home, "--port", str(port), "--print-env", "copilot", **KEY)
    assert openai.returncode == 0 and openai.stdout == f"export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:{port}/v1\n"
    responses = wrap(home, "--port", str(port), "--print-env", "copilot", COPILOT_PROVIDER_WIRE_API="responses", **KEY)
    assert responses.stdout == openai.stdout
    anthropic = wrap(home, "--port", str(port), "--print-env", "copilot", COPILOT_PROVIDER_TYPE="anthropic", **KEY)
    assert anthropic.stdout == f"export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:{port}\n"
    own = wrap(
        home, "--port", str(port), "--print-env", "copilot", COPILOT_PROVIDER_BASE_URL="http://10.1.2.3:11434/v1"
    )
    assert own.stdout.splitlines() == [
        f"export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:{port}/v1",
        "# its own settings send it to http://10.1.2.3:11434/v1: start the gateway with --openai-upstream "
        "http://10.1.2.3:11434/v1",
    ]
    assert not (home / ".local").exists()


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({}, "Copilot CLI goes through the gateway only with a model provider of your own"),
        ({"COPILOT_PROVIDER_TYPE": "azure", **KEY}, "COPILOT_PROVIDER_TYPE='azure': the gateway serves"),
        ({"COPILOT_PROVIDER_WIRE_API": "grpc", **KEY}, "COPILOT_PROVIDER_WIRE_API='grpc'"),
        ({"COPILOT_PROVIDER_TRANSPORT": "websockets", **KEY}, "over http only"),
    ],
)
def test_what_the_gateway_cannot_serve_is_refused_before_anything_starts(
    home: Path, env: dict[str, str], message: str
) -> None:
    fake = home / "bin"
    fake.mkdir(exist_ok=True)
    (fake / "copilot").write_text("#!/bin/sh\necho ran\n")
    (fake / "copilot").chmod(0o755)
    done = wrap(home, "--port", str(free_port()), "copilot", "-p", "hi", PATH=f"{fake}:/usr/bin:/bin", **env)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (home / ".local").exists(), "a gateway was started"
