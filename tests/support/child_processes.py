"""A process's live children, found the way an outsider would: /proc (Linux only)."""

from __future__ import annotations

from pathlib import Path


def child_pids(parent: int, mark: bytes) -> set[int]:
    """The live (not zombie) child processes of `parent` whose command line holds `mark`."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(")", 1)[1].split()  # after the command name, which may hold spaces and parentheses
        if int(fields[1]) == parent and fields[0] != "Z" and mark in cmdline:
            found.add(int(entry.name))
    return found


def ingest_workers(pid: int) -> int:
    """How many ingest workers (`python -m mcp_offload.core.ingest_worker`) `pid` runs."""
    return len(child_pids(pid, b"mcp_offload.core.ingest_worker"))
