"""Whether a store location can be inspected by the shell-side commands (`outputs`, `stats`) without creating it.

A store named on purpose (`--store`, `MCP_OFFLOAD_STORE`) that does not exist is a mistake worth an error; the
per-user default store that the first offloaded output has not created yet is not: there is just nothing in it.
"""

from __future__ import annotations

from pathlib import Path

from mcp_offload.settings import Settings, default_store_dir
from mcp_offload.store import is_redis_location

NOTHING_STORED = "nothing stored yet"


def unused_default_store(settings: Settings) -> Path | None:
    """The per-user default store's path when no store was named and nothing has been offloaded to it yet (the
    directory does not exist); None otherwise."""
    if settings.store:
        return None
    path = default_store_dir()
    return None if path.exists() or path.is_symlink() else path


def nothing_stored_yet(path: Path) -> str:
    return f"{NOTHING_STORED} (the per-user store {path} is created by the first offloaded output)"


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
