"""What this platform's `os` offers that the filesystem store's safety rests on, read once, never assumed.

Supported platforms: Linux and macOS (where Claude Desktop, Claude Code and Cursor users are). There every flag
below exists. Elsewhere (Windows) the package still imports: a missing flag reads as 0 here, and the filesystem
store refuses to start with a one-line reason (`missing_for_fs_store`) instead of running without the
`O_NOFOLLOW` walk and `flock` locks its guarantees need; a Redis store (`--store redis://…`) works there.
"""

from __future__ import annotations

import importlib.util
import os

O_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)
O_DIRECTORY: int = getattr(os, "O_DIRECTORY", 0)
O_CLOEXEC: int = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK: int = getattr(os, "O_NONBLOCK", 0)


def missing_for_fs_store() -> list[str]:
    """The features the filesystem store needs that this platform lacks (empty on Linux and macOS)."""
    missing = [name for name in ("O_NOFOLLOW", "O_DIRECTORY") if not getattr(os, name, 0)]
    if importlib.util.find_spec("fcntl") is None:
        missing.append("fcntl.flock")
    if os.open not in os.supports_dir_fd:
        missing.append("openat (os.open with dir_fd)")
    return missing
