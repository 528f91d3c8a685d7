"""A pytest plugin (`-p support.without_posix_flags`) that runs a test session as on a platform without
`os.O_DIRECTORY` and `os.O_NOFOLLOW` (Windows), to show the package imports and degrades there: loaded before any
test module imports mcp_offload. (`fcntl` stays: the MCP SDK itself imports it whenever sys.platform is not win32.)"""

from __future__ import annotations

import os

for _flag in ("O_DIRECTORY", "O_NOFOLLOW"):
    if hasattr(os, _flag):
        delattr(os, _flag)
