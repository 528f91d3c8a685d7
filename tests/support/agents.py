"""The real coding agents from npm (.ci/agents-deps.sh installs the pinned versions in ~/.cache/mcp-offload/agents or
$MCP_OFFLOAD_TEST_AGENTS), for the tests that run them headless against the scripted upstream."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

AGENTS = Path(
    os.environ.get("MCP_OFFLOAD_TEST_AGENTS")
    or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload" / "agents" / "node_modules"
)
CLAUDE = AGENTS / ".bin" / "claude"
CODEX = AGENTS / ".bin" / "codex"
GEMINI = AGENTS / ".bin" / "gemini"


def need(binary: Path) -> None:
    if not binary.exists():
        pytest.skip(f"{binary.name} is not installed: run `bash .ci/agents-deps.sh` (npm) to install the pinned agents")


def agent_env(**extra: str) -> dict[str, str]:
    """The environment for an agent: this one without any LLM provider's variables, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_", "CLAUDE", "GEMINI_"))}
    env.update(extra)
    return env
