"""Replacing a user's file atomically: a temp file beside it, fsynced, renamed over it, with the old mode kept.

A reader (the MCP client starting up) sees the old file or the new one, never half of either; a crash leaves
at most a `.<name>.tmp-*` file next to it. A symlinked file is written through the link (its target is
replaced), so dotfile managers keep working.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import time
from pathlib import Path

from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW


def write_atomic(path: Path, text: str, *, new_mode: int = 0o600) -> None:
    """Replace (or create) `path` with `text` (UTF-8). Keeps an existing file's permission bits."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_mode
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{secrets.token_hex(6)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed it at creation
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):  # not possible on every platform (Windows): the rename is still atomic
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def backup(path: Path, now: float | None = None) -> Path:
    """Copy `path` (contents, mode, times) to `<path>.bak-YYYYmmdd-HHMMSS` beside it; returns the copy's path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    copy = path.with_name(f"{path.name}.bak-{stamp}")
    n = 1
    while copy.exists():
        n += 1
        copy = path.with_name(f"{path.name}.bak-{stamp}-{n}")
    shutil.copy2(os.path.realpath(path), copy)
    return copy
