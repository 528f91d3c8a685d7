"""`mcp-offload import-config [PATH]`: move a client's MCP servers behind mcp-offload in one command.

Without `--write` it only prints the unified diff of both files (client config and servers.json). With it:
a timestamped backup of each existing file, then servers.json is written first and the client config second
(atomically, modes kept), so the client's new entry never points at a file that is not there yet. Running it
again changes nothing.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import sys
from pathlib import Path

from mcp_offload.cli.arg_types import OneLineParser
from mcp_offload.cli.atomic_file import backup, write_atomic
from mcp_offload.cli.client_config import (
    ImportPlan,
    claude_desktop_config_path,
    find_servers_path,
    is_offload_entry,
    load_json_object,
    offload_entry_of,
    plan_import,
    read_text,
    user_servers_path,
)
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.errors import OperatorError
from mcp_offload.proxy.config import parse_config


def parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="mcp-offload import-config",
        description="Move the MCP servers of a client config (Claude Desktop, Claude Code's ~/.claude.json or "
        ".mcp.json, Cursor's mcp.json) into mcp-offload's servers.json, leaving one 'offload' entry that runs "
        "them through mcp-offload. Prints the diff; --write applies it (after a timestamped backup).",
    )
    parser.add_argument(
        "path", nargs="?", help=f"the client config (default: Claude Desktop's, {claude_desktop_config_path()})"
    )
    parser.add_argument(
        "--servers",
        metavar="PATH",
        help=f"the servers.json to write (default: the one the offload entry already uses, else {user_servers_path()})",
    )
    parser.add_argument("--write", action="store_true", help="apply the change (default: only show the diff)")
    return parser


# What a client launched from the desktop (Claude Desktop on macOS: launchd's default) finds on its PATH.
CLIENT_MINIMAL_PATH = os.pathsep.join(("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"))
_SCRIPT_NAMES = ("mcp-offload", "mcp-offload.exe")


def offload_command() -> tuple[str, list[str]]:
    """How the client should start the mcp-offload that is running now, by absolute path: clients start servers
    with a minimal PATH (a venv that is not activated, ~/.local/bin, Homebrew's bin are usually not on it), so a
    bare `mcp-offload` fails there with ENOENT. In order: the console script we were started as, the one next to
    this Python (a venv's bin), the one on PATH, else this Python with `-m mcp_offload`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name.lower() in _SCRIPT_NAMES and argv0.is_file():
        return os.path.abspath(argv0), []
    for name in _SCRIPT_NAMES:
        beside = Path(sys.executable).with_name(name)
        if beside.is_file():
            return str(beside), []
    found = shutil.which("mcp-offload")
    if found:
        return os.path.abspath(found), []
    return os.path.abspath(sys.executable), ["-m", "mcp_offload"]


def unreachable_command(plan: ImportPlan) -> str | None:
    """The offload entry's command when a client with a minimal PATH could not start it (a bare name not found
    on CLIENT_MINIMAL_PATH), else None."""
    entry = offload_entry_of(json.loads(plan.client_after), str(plan.servers_path))
    if entry is None:
        return None
    command = entry["command"]
    if os.sep in command or (os.altsep and os.altsep in command):
        return None
    return command if shutil.which(command, path=CLIENT_MINIMAL_PATH) is None else None


def unreachable_hint(command: str) -> str:
    """What to put in the entry instead of a bare `command` a client cannot find."""
    if is_offload_entry({"command": command}):
        ours, args = offload_command()
        instead = " ".join([ours, *args])
    else:
        found = shutil.which(command)
        instead = os.path.abspath(found) if found else f"the absolute path of {command}"
    return (
        f"the client entry starts {command!r} by name, which a client started from the desktop "
        f'(PATH={CLIENT_MINIMAL_PATH}) cannot find; set its "command" to {instead}'
    )


def make_plan(client_path: Path, servers: Path | None) -> ImportPlan:
    client_text = read_text(client_path)
    if servers is None:
        existing = find_servers_path(load_json_object(client_path, client_text))
        servers = Path(existing) if existing else user_servers_path()
    servers = servers.expanduser().absolute()
    servers_text = read_text(servers) if servers.exists() else ""
    command, args = offload_command()
    plan = plan_import(client_path, client_text, servers, servers_text, command, args)
    parse_config(load_json_object(servers, plan.servers_after), source=str(servers), base_dir=servers.parent)
    return plan


def render_diff(plan: ImportPlan) -> str:
    parts: list[str] = []
    for path, before, after in (
        (plan.servers_path, plan.servers_before, plan.servers_after),
        (plan.client_path, plan.client_before, plan.client_after),
    ):
        if before != after:
            old = f"{path} (new file)" if not before else str(path)
            parts.extend(difflib.unified_diff(before.splitlines(True), after.splitlines(True), old, str(path)))
    return "".join(line if line.endswith("\n") else line + "\n" for line in parts)


def apply_plan(plan: ImportPlan) -> list[Path]:
    """Back up and write both files (servers.json first). Returns the backups made."""
    backups = []
    if plan.servers_changes:
        if plan.servers_before:
            backups.append(backup(plan.servers_path))
        write_atomic(plan.servers_path, plan.servers_after)
    if plan.client_changes:
        backups.append(backup(plan.client_path))
        write_atomic(plan.client_path, plan.client_after)
    return backups


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return exit_status(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    client_path = Path(args.path).expanduser().absolute() if args.path else claude_desktop_config_path()
    try:
        plan = make_plan(client_path, Path(args.servers) if args.servers else None)
        if not plan.changes:
            print(f"{client_path}: already runs its servers through mcp-offload ({plan.servers_path}); nothing to do")
            return 0
        unreachable = unreachable_command(plan)
        if unreachable is not None:
            print(f"warning: {unreachable_hint(unreachable)}", file=sys.stderr)
        if plan.dropped:
            print(f"note: not keeping mcp-offload entries in servers.json: {', '.join(plan.dropped)}", file=sys.stderr)
        if not args.write:
            sys.stdout.write(render_diff(plan))
            print(f"# {len(plan.moved)} server(s) would move; run again with --write to apply (backups are made first)")
            return 0
        backups = apply_plan(plan)
    except OSError as exc:
        raise OperatorError(f"cannot write {exc.filename or 'a file'}: {exc.strerror}") from None
    moved = ", ".join(plan.moved) or "no servers"
    print(f"moved {moved} to {plan.servers_path}; {client_path} now runs them through mcp-offload")
    for copy in backups:
        print(f"backup: {copy}")
    return 0
