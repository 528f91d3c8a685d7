"""`mcp-offload wrap cline` as a process: Cline is pointed by CLINE_PROVIDER_SETTINGS_PATH at a copy of the user's
providers.json with the gateway as the openai-compatible provider's base URL (written readable by the user only, the
user's file untouched), the user's base URL named as the upstream; what wrap does not know is refused in one line with
nothing started. (The real Cline through wrap: tests/gateway/test_wrap_agents.py.)"""

from __future__ import annotations

import json
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import free_port
from support.wrap import WRAP, wrap_env


def providers(last: str = "openai-compatible", version: int = 1) -> dict[str, Any]:
    entry = {"settings": {"provider": last, "apiKey": "sk-user", "model": "m", "baseUrl": "http://10.9.8.7:8000/v1"}}
    return {"version": version, "lastUsedProvider": last, "providers": {last: entry, "anthropic": {"settings": {}}}}


def wrap(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in wrap_env(home).items() if not k.startswith("CLINE_")}
    return subprocess.run([*WRAP, *argv], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / ".cline/data/settings").mkdir(parents=True)
    return home


def test_print_env_names_a_copy_pointed_at_the_gateway(home: Path) -> None:
    user = home / ".cline/data/settings/providers.json"
    user.write_text(json.dumps(providers()))
    before = user.read_text()
    port = free_port()
    done = wrap(home, "--port", str(port), "--print-env", "cline")
    copy = home / ".local/share/mcp-offload/cline/providers.json"
    hub_port = int(done.stdout.split("CLINE_HUB_PORT=")[1].split()[0])
    assert hub_port not in (25463, port)  # a port of its own: not Cline's default hub port
    assert done.returncode == 0 and done.stdout.splitlines() == [
        f"export CLINE_PROVIDER_SETTINGS_PATH={copy}",
        f"export CLINE_HUB_DISCOVERY_PATH={copy.parent}/hubs/{hub_port}/hub.json",
        f"export CLINE_HUB_PORT={hub_port}",
        f"# wrote {copy}",
        "# its own settings send it to http://10.9.8.7:8000/v1: start the gateway with --openai-upstream "
        "http://10.9.8.7:8000/v1",
    ], done
    pointed = json.loads(copy.read_text())
    assert pointed["providers"] == {
        "openai-compatible": {
            "settings": {
                "provider": "openai-compatible",
                "apiKey": "sk-user",
                "model": "m",
                "baseUrl": f"http://127.0.0.1:{port}/v1",
            }
        }
    }
    assert stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert user.read_text() == before


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (None, "Cline has no provider settings"),
        (providers(last="cline"), "wrap points Cline's openai-compatible provider only"),
        (providers(version=2), "is not Cline's provider settings format version 1"),
    ],
)
def test_what_wrap_does_not_know_is_refused_before_anything_starts(
    home: Path, settings: dict[str, Any] | None, message: str
) -> None:
    if settings is not None:
        (home / ".cline/data/settings/providers.json").write_text(json.dumps(settings))
    fake = home / "bin"
    fake.mkdir()
    (fake / "cline").write_text("#!/bin/sh\necho ran\n")
    (fake / "cline").chmod(0o755)
    env = {k: v for k, v in wrap_env(home).items() if not k.startswith("CLINE_")} | {"PATH": f"{fake}:/usr/bin:/bin"}
    argv = [*WRAP, "--port", str(free_port()), "cline", "hi"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (home / ".local").exists(), "a gateway was started or a file written"
