"""`mcp-offload import-config [PATH]`: move a client's MCP servers behind mcp-offload in one command.

Without `--write` it only prints the unified diff of both files (client config and servers.json). With it:
a timestamped backup of each existing file, then servers.json is written first and the client config second
(atomically, modes kept), so the client's new entry never points at a file that is not there yet. Running it
again changes nothing.
"""

from __future__ import annotations

import argparse
import difflib
import os
import shutil
import sys
from pathlib import Path

from mcp_offload.cli.atomic_file import backup, write_atomic
from mcp_offload.cli.client_config import (
    ImportPlan,
    claude_desktop_config_path,
    find_servers_path,
    load_json_object,
    plan_import,
    read_text,
    user_servers_path,
)
from mcp_offload.cli.exit_status import exit_status
from mcp_offload.errors import OperatorError
from mcp_offload.proxy.config import parse_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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


def offload_command() -> str:
    """The absolute path of the `mcp-offload` on PATH (clients often start with a minimal PATH), else the name."""
    found = shutil.which("mcp-offload")
    return os.path.abspath(found) if found else "mcp-offload"


def make_plan(client_path: Path, servers: Path | None) -> ImportPlan:
    client_text = read_text(client_path)
    if servers is None:
        existing = find_servers_path(load_json_object(client_path, client_text))
        servers = Path(existing) if existing else user_servers_path()
    servers = servers.expanduser().absolute()
    servers_text = read_text(servers) if servers.exists() else ""
    plan = plan_import(client_path, client_text, servers, servers_text, offload_command())
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
    args = _parser().parse_args(argv)
    return exit_status(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    client_path = Path(args.path).expanduser().absolute() if args.path else claude_desktop_config_path()
    try:
        plan = make_plan(client_path, Path(args.servers) if args.servers else None)
        if not plan.changes:
            print(f"{client_path}: already runs its servers through mcp-offload ({plan.servers_path}); nothing to do")
            return 0
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
