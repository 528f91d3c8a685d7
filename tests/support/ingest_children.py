"""How many ingest worker processes a server process has started (read from /proc: Linux only)."""

from __future__ import annotations

from pathlib import Path


def ingest_workers(pid: int) -> int:
    """How many of `pid`'s child processes are ingest workers (`python -m mcp_offload.core.ingest_worker`)."""
    count = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # gone meanwhile
            continue
        parent = next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))
        count += parent == str(pid) and b"mcp_offload.core.ingest_worker" in command
    return count
