"""The filesystem discipline of the records kept beside the outputs (the savings record, the decision record): one
append-only JSON-lines log per key, 0600 files in a 0700 directory under the store root, opened with `O_NOFOLLOW`.

A line is compact JSON (ASCII, no spaces) and ends with a newline; it is added by `write` on an `O_APPEND` descriptor,
so lines from several processes never interleave (each record says how it keeps a line whole). A reader skips a
line that does not parse (a disk that filled up mid-write). The outputs themselves live in `store/fs/`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mcp_offload.errors import StoreUnavailable
from mcp_offload.os_support import O_CLOEXEC, O_NOFOLLOW

# the flags from os_support: the package imports where one is missing (the filesystem store then refuses to start)
READ_FLAGS = os.O_RDONLY | O_NOFOLLOW | O_CLOEXEC
APPEND_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC
READ_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CREAT | O_NOFOLLOW | O_CLOEXEC
FILE_MODE = 0o600


def json_line(value: Any) -> bytes:
    """One log line: `value` as compact ASCII JSON and a newline."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def make_private_directory(directory: Path, *, plain: str | None = None) -> None:
    """Create `directory` (0700, with its parents). With `plain`, refuse a symlink or a non-directory there with
    `StoreUnavailable(plain)`."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if plain is not None and (directory.is_symlink() or not directory.is_dir()):
        raise StoreUnavailable(plain)


def write_all(fd: int, payload: bytes) -> None:
    """Write all of `payload` to `fd` (one `write` when the kernel takes it whole, as it does for a pipe-sized line)."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]
