"""Running `mcp-offload wrap` in the tests: its command line and a user's environment with a scratch HOME."""

from __future__ import annotations

import os
import sys
from pathlib import Path

WRAP = [sys.executable, "-m", "mcp_offload", "wrap"]


def wrap_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment with a scratch HOME: mcp-offload's own directories (store, log) fall under it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MCP_OFFLOAD_", "ANTHROPIC_", "OPENAI_"))}
    return {**env, "HOME": str(home), **extra}
