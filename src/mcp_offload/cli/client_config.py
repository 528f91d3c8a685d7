"""MCP client config files (Claude Desktop, Claude Code, Cursor): where they live, what is in them, and how they
look once their servers sit behind mcp-offload.

All three clients keep their servers under a top-level `"mcpServers"` object:

- Claude Desktop: `claude_desktop_config.json` in the platform's config dir (`claude_desktop_config_path`);
- Claude Code: `~/.claude.json` (user servers at the top level; per-project ones under `projects` are left
  alone) and a project's `.mcp.json`;
- Cursor: `~/.cursor/mcp.json` and a project's `.cursor/mcp.json`.

`plan_import` is pure: from the two files' current texts it computes their new texts (the client config with
one `offload` entry running `mcp-offload --config <servers.json>`, every other server moved unchanged into
servers.json). Writing them (backup, atomic replace) is `cli/import_config.py`'s job.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PureWindowsPath
from typing import Any

import platformdirs

from mcp_offload.errors import OperatorError

OFFLOAD_ENTRY = "offload"
SERVERS_FILE = "servers.json"
_OUR_NAMES = {"mcp-offload", "mcp-offload.exe", "mcp_offload"}


class ClientConfigError(OperatorError):
    """A client config or servers.json that cannot be imported; the message is one line, for the user."""


def claude_desktop_config_path(
    system: str | None = None, home: Path | None = None, env: Mapping[str, str] | None = None
) -> Path:
    """Where Claude Desktop keeps its config on `system` ("linux", "darwin", "win32"; default: this one)."""
    system = system or sys.platform
    home = home or Path.home()
    env = os.environ if env is None else env
    if system == "darwin":
        return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
    if system.startswith("win"):
        appdata = env.get("APPDATA") or str(PureWindowsPath(home) / "AppData" / "Roaming")
        return Path(str(PureWindowsPath(appdata) / "Claude" / "claude_desktop_config.json"))
    config_home = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config_home) / "Claude" / "claude_desktop_config.json"


def user_servers_path() -> Path:
    """The per-user servers.json (`import-config` writes it; `mcp-offload` without `--config` reads it)."""
    return Path(platformdirs.user_config_dir("mcp-offload", appauthor=False)) / SERVERS_FILE


def load_json_object(path: Path, text: str, *, need_servers: bool = True) -> dict[str, Any]:
    """Parse a config text: a JSON object with an `mcpServers` object, else a one-line `ClientConfigError`."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ClientConfigError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); nothing written") from None
    if not isinstance(data, dict):
        raise ClientConfigError(f"{path}: the top level is not a JSON object; nothing written")
    servers = data.get("mcpServers")
    if servers is None and need_servers:
        raise ClientConfigError(f'{path}: no "mcpServers" object, so there are no servers to import; nothing written')
    if servers is not None and not isinstance(servers, dict):
        raise ClientConfigError(f'{path}: "mcpServers" is not an object; nothing written')
    return data


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClientConfigError(f"{path}: no such file; nothing written") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClientConfigError(f"{path}: cannot read it ({exc}); nothing written") from None


def is_offload_entry(entry: object) -> bool:
    """An entry that runs mcp-offload: `mcp-offload …`, `python -m mcp_offload …`, `uvx`/`pipx run mcp-offload …`."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    command = _base_name(entry["command"])
    args = [a for a in entry.get("args") or [] if isinstance(a, str)]
    if command in _OUR_NAMES:
        return True
    if command.startswith("python") or command == "py":
        return any(a == "mcp_offload" and i > 0 and args[i - 1] == "-m" for i, a in enumerate(args))
    runners = {"uvx": 0, "pipx": 1, "uv": 2}  # uvx PKG / pipx run PKG / uv tool run PKG (options skipped)
    if command in runners:
        words = [a for a in args if not a.startswith("-")]
        if len(words) > runners[command]:
            return _package_name(words[runners[command]]) in _OUR_NAMES
    return False


def _base_name(command: str) -> str:
    name = PureWindowsPath(command).name if "\\" in command else Path(command).name
    return name.lower()


def _package_name(spec: str) -> str:
    for sep in ("==", "@", ">=", "["):
        spec = spec.split(sep, 1)[0]
    return spec.lower()


def config_arg(entry: Mapping[str, Any]) -> str | None:
    """The `--config PATH` an offload entry runs with, if any."""
    args = [a for a in entry.get("args") or [] if isinstance(a, str)]
    for i, arg in enumerate(args):
        if arg == "--config" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--config="):
            return arg.split("=", 1)[1]
    return None


def with_config_arg(entry: Mapping[str, Any], servers: str) -> dict[str, Any]:
    """The entry (other keys kept) running with `--config servers` (replacing any other --config)."""
    args = [a for a in entry.get("args") or []]
    out: list[Any] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg == "--config" and i + 1 < len(args):
            skip = True
            continue
        if isinstance(arg, str) and (arg.startswith("--config=") or arg == "--no-config"):
            continue
        out.append(arg)
    return {**entry, "args": [*out, "--config", servers]}


@dataclass(frozen=True, slots=True)
class ImportPlan:
    """The two files before and after an import; `moved` names the servers that go behind mcp-offload."""

    client_path: Path
    client_before: str
    client_after: str
    servers_path: Path
    servers_before: str  # "" when servers.json does not exist yet
    servers_after: str
    moved: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()  # offload entries found in servers.json (mcp-offload proxying itself)

    @property
    def client_changes(self) -> bool:
        return self.client_after != self.client_before  # an unchanged file keeps its exact text

    @property
    def servers_changes(self) -> bool:
        return self.servers_after != self.servers_before

    @property
    def changes(self) -> bool:
        return self.client_changes or self.servers_changes


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def find_servers_path(client: Mapping[str, Any]) -> str | None:
    """The servers.json an offload entry of this client config already runs with, if any."""
    for entry in client.get("mcpServers", {}).values():
        if is_offload_entry(entry) and config_arg(entry):
            return config_arg(entry)
    return None


def offload_entry_of(client: Mapping[str, Any], servers: str) -> dict[str, Any] | None:
    """The offload entry running with `--config servers` in a client config (the one `plan_import` leaves)."""
    for entry in client.get("mcpServers", {}).values():
        if is_offload_entry(entry) and config_arg(entry) == servers:
            return dict(entry)
    return None


def plan_import(
    client_path: Path,
    client_text: str,
    servers_path: Path,
    servers_text: str,
    command: str,
    command_args: Sequence[str] = (),
) -> ImportPlan:
    """Move every non-offload server of the client config into servers.json; leave one offload entry behind.

    `servers_text` is the current servers.json ("" if none): its servers and other keys are kept. A server name
    present in both files with different entries is refused (nothing is written). A new entry runs `command`
    with `command_args` (e.g. `python -m mcp_offload`) before `--config`.
    """
    client = load_json_object(client_path, client_text)
    servers_doc = load_json_object(servers_path, servers_text) if servers_text else {"mcpServers": {}}
    target: dict[str, Any] = {}
    dropped = []
    for name, entry in servers_doc["mcpServers"].items():
        if is_offload_entry(entry):
            dropped.append(name)  # mcp-offload proxying itself: never kept in servers.json
        else:
            target[name] = entry
    kept: dict[str, Any] = {}
    moved = []
    for name, entry in client["mcpServers"].items():
        if is_offload_entry(entry):
            kept[name] = entry
            continue
        if name in target and target[name] != entry:
            raise ClientConfigError(
                f'{servers_path}: already has a different server named "{name}"; rename one of them; nothing written'
            )
        target[name] = entry
        moved.append(name)
    kept = _with_proxy_entry(kept, str(servers_path), command, command_args)
    new_client = {**client, "mcpServers": kept}
    new_servers = {**servers_doc, "mcpServers": target}
    return ImportPlan(
        client_path=client_path,
        client_before=client_text,
        client_after=client_text if client == new_client else dump_json(new_client),
        servers_path=servers_path,
        servers_before=servers_text,
        servers_after=servers_text
        if servers_text and json.loads(servers_text) == new_servers
        else dump_json(new_servers),
        moved=tuple(moved),
        dropped=tuple(dropped),
    )


def _with_proxy_entry(kept: dict[str, Any], servers: str, command: str, command_args: Sequence[str]) -> dict[str, Any]:
    """The offload entries with exactly one of them running `--config servers` (a new `offload` entry if none)."""
    proxies = [name for name, entry in kept.items() if config_arg(entry) is not None]
    chosen = next((n for n in proxies if config_arg(kept[n]) == servers), None)
    if chosen is None and proxies:
        chosen = proxies[0]
    if chosen is None and OFFLOAD_ENTRY in kept:
        chosen = OFFLOAD_ENTRY
    if chosen is None and kept:
        chosen = next(iter(kept))
    if chosen is None:
        return {OFFLOAD_ENTRY: {"command": command, "args": [*command_args, "--config", servers]}}
    if config_arg(kept[chosen]) == servers:
        return kept
    return {**kept, chosen: with_config_arg(kept[chosen], servers)}
