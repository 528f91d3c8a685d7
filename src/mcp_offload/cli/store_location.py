"""Whether a store location can be inspected by the shell-side commands (`outputs`, `stats`) without creating it."""

from __future__ import annotations

from pathlib import Path

from mcp_offload.store import is_redis_location


def missing_store(where: str) -> str | None:
    """Why `where` (a store directory) cannot be inspected, or None when it is a store. Nothing is created: a
    mistyped path must not look like an empty store, nor become one."""
    if is_redis_location(where):
        return None
    path = Path(where).expanduser()
    if not path.exists():
        return f"no store at {path}: the directory does not exist (check --store or MCP_OFFLOAD_STORE)"
    if not path.is_dir():
        return f"no store at {path}: it is not a directory (check --store or MCP_OFFLOAD_STORE)"
    if not (path / "v1").is_dir():
        return f"{path} is not an mcp-offload store (it has no v1/ directory; check --store or MCP_OFFLOAD_STORE)"
    return None
