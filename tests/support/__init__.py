"""Test helpers with no fixtures behind them: the protocol eras, a tool result's text, a free loopback port, and
child processes read from /proc. The modules beside this one hold the helpers (and fixtures, registered as plugins
by tests/conftest.py) of one area each."""

from __future__ import annotations

import os
from pathlib import Path

import mcp.types as types

from support.ports import free_port as free_port  # re-exported: the one way to get a port for a child

# How long a test waits for a server or child process to start, answer or exit before calling it a hang. It ends a
# hang and measures nothing: a Python child imports for 2-3 s of CPU, which on two cores shared with other xdist
# workers (and, on the team's machine, other suites) took over 30 s of wall time.
HANG_TIMEOUT_S = 180.0

ERAS = ["auto", "legacy"]  # 2026-07-28 per-request envelope, and the 2025-11-25 handshake


def text_block(block: object) -> str:
    """The text of a content block that must be a `TextContent` (the test fails otherwise)."""
    assert isinstance(block, types.TextContent), block
    return block.text


def resource_text(contents: object) -> str:
    """The text of resource contents that must be `TextResourceContents`."""
    assert isinstance(contents, types.TextResourceContents), contents
    return contents.text


def resource_blob(contents: object) -> str:
    """The base64 blob of resource contents that must be `BlobResourceContents`."""
    assert isinstance(contents, types.BlobResourceContents), contents
    return contents.blob


def text_of(result: object) -> str:
    """The text of a tool result (all its text blocks, joined)."""
    return "".join(getattr(block, "text", "") for block in result.content)  # type: ignore[attr-defined]


# -- processes, from /proc (no psutil) ------------------------------------------------------------------------
def _stat(pid: int) -> tuple[str, int] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    try:
        fields = raw.rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])  # state, ppid
    except (IndexError, ValueError):
        return None


def descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            children.setdefault(stat[1], []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pids: list[int]) -> list[int]:
    """The pids that still run (zombies count as gone)."""
    return [pid for pid in pids if (stat := _stat(pid)) is not None and stat[0] not in ("Z", "X")]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
