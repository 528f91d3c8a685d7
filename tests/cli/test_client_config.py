"""`mcp-offload import-config` on real files of the three client flavours, `client_config` paths and bad input.

Every test points platformdirs at a temporary XDG_CONFIG_HOME, so the per-user servers.json is the test's own.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_offload.cli import import_config
from mcp_offload.cli.client_config import claude_desktop_config_path, is_offload_entry, user_servers_path

GIT = {"command": "uvx", "args": ["mcp-server-git", "--repository", "/src/app"], "env": {"GIT_AUTHOR": "me"}}
REMOTE = {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer t"}}
FS = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/data"], "autoApprove": ["x"]}


@pytest.fixture(autouse=True)
def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "mcp-offload" / "servers.json"


def _write(path: Path, data: Any, mode: int = 0o640) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    path.chmod(mode)
    return path


def _run(*argv: str) -> int:
    return import_config.main(list(argv))


FLAVOURS: dict[str, dict[str, Any]] = {
    # Claude Desktop: other top-level keys, a server with env, one already behind mcp-offload (python -m)
    "claude_desktop_config.json": {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "git": GIT,
            "offload": {"command": "/usr/bin/python3", "args": ["-m", "mcp_offload", "--store", "/s"]},
            "files": FS,
        },
    },
    # Claude Code's ~/.claude.json: user servers at the top level, per-project ones left alone
    ".claude.json": {
        "numStartups": 12,
        "projects": {"/src/app": {"mcpServers": {"local": {"command": "x"}}, "allowedTools": []}},
        "mcpServers": {"git": {"type": "stdio", **GIT}, "remote": REMOTE},
    },
    # Cursor's ~/.cursor/mcp.json, with an offload entry run through uvx
    "mcp.json": {
        "mcpServers": {
            "mcp-offload": {"command": "uvx", "args": ["mcp-offload==0.1.0"]},
            "files": FS,
            "remote": REMOTE,
        }
    },
}


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_import_moves_servers_and_is_idempotent(tmp_path: Path, user_config: Path, flavour: str) -> None:
    original = FLAVOURS[flavour]
    client = _write(tmp_path / "client" / flavour, original)
    before = client.read_text()

    assert _run(str(client)) == 0  # a dry run writes nothing
    assert client.read_text() == before and not user_config.exists()

    assert _run(str(client), "--write") == 0
    servers = json.loads(user_config.read_text())
    new = json.loads(client.read_text())
    ours = {n for n, e in original["mcpServers"].items() if is_offload_entry(e)}
    moved = {n: e for n, e in original["mcpServers"].items() if n not in ours}
    assert servers == {"mcpServers": moved}  # moved unchanged (env, headers, unknown keys), no offload entry
    assert {k: v for k, v in new.items() if k != "mcpServers"} == {
        k: v for k, v in original.items() if k != "mcpServers"
    }  # other top-level keys (Claude Code's projects too) kept
    (name,) = new["mcpServers"]
    entry = new["mcpServers"][name]
    assert is_offload_entry(entry) and entry["args"][-2:] == ["--config", str(user_config)]
    if ours:  # the existing entry was kept (its command and other args), only --config added
        (old,) = ours
        assert name == old and entry["command"] == original["mcpServers"][old]["command"]
        assert entry["args"][:-2] == original["mcpServers"][old]["args"]
    assert stat.S_IMODE(client.stat().st_mode) == 0o640  # mode kept
    backups = list(client.parent.glob(f"{flavour}.bak-*"))
    assert len(backups) == 1 and backups[0].read_text() == before

    snapshot = (client.read_text(), user_config.read_text())
    assert _run(str(client), "--write") == 0  # twice: nothing changes, no new backup
    assert (client.read_text(), user_config.read_text()) == snapshot
    assert len(list(client.parent.glob(f"{flavour}.bak-*"))) == 1


def test_new_entry_runs_the_running_mcp_offload_by_absolute_path(
    tmp_path: Path, user_config: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the first `mcp-offload` on PATH, nor a bare name when none is: the one running now."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    other = bindir / "mcp-offload"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    ours = Path(sys.executable).with_name("mcp-offload")
    assert ours.is_file()
    for path in (f"{bindir}{os.pathsep}{os.environ['PATH']}", str(tmp_path / "empty")):
        monkeypatch.setenv("PATH", path)
        client = _write(tmp_path / "c.json", {"mcpServers": {"git": GIT}})
        assert _run(str(client), "--write") == 0
        assert json.loads(client.read_text())["mcpServers"] == {
            "offload": {"command": str(ours), "args": ["--config", str(user_config)]}
        }
        user_config.unlink()
    assert "warning" not in capsys.readouterr().err


def test_a_bare_command_the_client_cannot_find_is_warned_about(
    tmp_path: Path, user_config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client = _write(tmp_path / "c.json", {"mcpServers": {"offload": {"command": "mcp-offload"}, "git": GIT}})
    assert _run(str(client)) == 0
    err = capsys.readouterr().err
    assert "warning: the client entry starts 'mcp-offload' by name" in err
    assert str(Path(sys.executable).with_name("mcp-offload")) in err


def test_the_written_entry_starts_from_a_minimal_path(tmp_path: Path) -> None:
    """The README's install (a venv, not activated): import-config --write run by absolute path, then the client
    entry started as Claude Desktop does, with launchd's minimal PATH, still reaches the moved server."""
    from support.proxy import fixture_entry

    minimal = "/usr/bin:/bin:/usr/sbin:/sbin"
    base = {
        "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "HOME": str(tmp_path),
    }
    client = _write(tmp_path / "claude.json", {"mcpServers": {"fix": fixture_entry()}})
    exe = str(Path(sys.executable).with_name("mcp-offload"))
    done = subprocess.run(
        [exe, "import-config", str(client), "--write"],
        env={**base, "PATH": minimal},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    entry = json.loads(client.read_text())["mcpServers"]["offload"]
    assert os.path.isabs(entry["command"])

    async def start() -> list[str]:
        from mcp import Client, StdioServerParameters

        params = StdioServerParameters(
            command=entry["command"], args=entry["args"], env={**base, "PATH": minimal}, cwd=str(tmp_path)
        )
        async with Client(params, read_timeout_seconds=60) as mcp_client:
            return [t.name for t in (await mcp_client.list_tools()).tools]

    import anyio

    assert "fix__echo" in anyio.run(start)


def test_existing_servers_json_is_merged_and_its_offload_entries_dropped(tmp_path: Path, user_config: Path) -> None:
    _write(
        user_config,
        {"offload": {"threshold_tokens": 100}, "mcpServers": {"files": FS, "me": {"command": "mcp-offload"}}},
    )
    client = _write(tmp_path / "c.json", {"mcpServers": {"git": GIT, "files": FS}})
    assert _run(str(client), "--write") == 0
    assert json.loads(user_config.read_text()) == {
        "offload": {"threshold_tokens": 100},
        "mcpServers": {"files": FS, "git": GIT},
    }
    assert len(list(user_config.parent.glob("servers.json.bak-*"))) == 1


def test_an_entry_already_using_a_servers_file_keeps_using_it(tmp_path: Path, user_config: Path) -> None:
    theirs = tmp_path / "elsewhere" / "servers.json"
    client = _write(
        tmp_path / "c.json",
        {"mcpServers": {"proxy": {"command": "mcp-offload", "args": ["--config", str(theirs)]}, "git": GIT}},
    )
    assert _run(str(client), "--write") == 0
    assert json.loads(theirs.read_text()) == {"mcpServers": {"git": GIT}}
    assert not user_config.exists()
    assert json.loads(client.read_text())["mcpServers"] == {
        "proxy": {"command": "mcp-offload", "args": ["--config", str(theirs)]}
    }


BAD = {
    "not json": "{ not json",
    "no mcpServers": '{"globalShortcut": "x"}',
    "mcpServers not an object": '{"mcpServers": []}',
    "top level not an object": "[1, 2]",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_client_configs_fail_in_one_line_and_write_nothing(
    tmp_path: Path, user_config: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    client = tmp_path / "c.json"
    client.write_text(BAD[case])
    assert _run(str(client), "--write") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mcp-offload: ") and "nothing written" in err
    assert client.read_text() == BAD[case] and not user_config.exists()
    assert list(tmp_path.glob("c.json.bak-*")) == []


def test_missing_file_and_name_clash(tmp_path: Path, user_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(str(tmp_path / "nope.json"), "--write") == 2
    assert "no such file" in capsys.readouterr().err and not user_config.exists()
    _write(user_config, {"mcpServers": {"git": {"command": "other"}}})
    before = user_config.read_text()
    client = _write(tmp_path / "c.json", {"mcpServers": {"git": GIT}})
    assert _run(str(client), "--write") == 2
    assert 'different server named "git"' in capsys.readouterr().err
    assert user_config.read_text() == before and json.loads(client.read_text())["mcpServers"] == {"git": GIT}


def test_platform_default_paths(tmp_path: Path) -> None:
    home = Path("/home/u")
    assert claude_desktop_config_path("linux", home, {}) == home / ".config/Claude/claude_desktop_config.json"
    assert claude_desktop_config_path("linux", home, {"XDG_CONFIG_HOME": "/x"}) == Path(
        "/x/Claude/claude_desktop_config.json"
    )
    assert claude_desktop_config_path("darwin", home, {}) == home / (
        "Library/Application Support/Claude/claude_desktop_config.json"
    )
    win = claude_desktop_config_path("win32", home, {"APPDATA": "C:\\Users\\u\\AppData\\Roaming"})
    assert str(win) == "C:\\Users\\u\\AppData\\Roaming\\Claude\\claude_desktop_config.json"
    assert user_servers_path() == tmp_path / "xdg" / "mcp-offload" / "servers.json"


@pytest.mark.parametrize(
    ("entry", "ours"),
    [
        ({"command": "mcp-offload"}, True),
        ({"command": "/opt/bin/mcp-offload", "args": ["--config", "x"]}, True),
        ({"command": "C:\\tools\\mcp-offload.exe"}, True),
        ({"command": "python3", "args": ["-m", "mcp_offload"]}, True),
        ({"command": "uvx", "args": ["--from", "x", "mcp-offload"]}, False),  # --from's value is the package
        ({"command": "uvx", "args": ["mcp-offload@latest"]}, True),
        ({"command": "pipx", "args": ["run", "mcp-offload"]}, True),
        ({"command": "uv", "args": ["tool", "run", "mcp-offload"]}, True),
        ({"command": "uvx", "args": ["mcp-server-git"]}, False),
        ({"command": "python", "args": ["server.py", "mcp_offload"]}, False),
        ({"url": "https://x/mcp"}, False),
    ],
)
def test_offload_entries_are_recognised(entry: dict[str, Any], ours: bool) -> None:
    assert is_offload_entry(entry) is ours


def test_end_to_end_as_a_real_subprocess(tmp_path: Path) -> None:
    """The installed console script, a Claude Desktop file at its Linux default location (via XDG_CONFIG_HOME)."""
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    client = _write(tmp_path / "xdg" / "Claude" / "claude_desktop_config.json", FLAVOURS["claude_desktop_config.json"])
    exe = str(Path(sys.executable).with_name("mcp-offload"))
    dry = subprocess.run([exe, "import-config"], env=env, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "+++ " + str(client) in dry.stdout and '"git"' in dry.stdout
    done = subprocess.run([exe, "import-config", "--write"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "moved git, files" in done.stdout
    again = subprocess.run([exe, "import-config", "--write"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "nothing to do" in again.stdout
    bad = subprocess.run(
        [exe, "import-config", str(tmp_path / "missing.json")], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
