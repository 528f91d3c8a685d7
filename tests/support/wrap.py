"""Running `mcp-offload wrap` in the tests: its command line, a user's environment with a scratch HOME, and a run
with the files it changed under that HOME."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from llm_upstream import UpstreamServer
from support.agents import agent_env

WRAP = [sys.executable, "-m", "mcp_offload", "wrap"]


def wrap_env(home: Path, **extra: str) -> dict[str, str]:
    """A user's environment with a scratch HOME: mcp-offload's own directories (store, log) fall under it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MCP_OFFLOAD_", "ANTHROPIC_", "OPENAI_"))}
    return {**env, "HOME": str(home), **extra}


OWN_DIRS = (".local/share/mcp-offload/", ".local/state/mcp-offload/", ".cache/mcp-offload/")  # mcp-offload's own


def snapshot(home: Path) -> dict[str, str]:
    """Every file under `home` (symbolic links not followed) with the SHA-256 of its bytes."""
    return {
        str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(home.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {path for path in before.keys() | after.keys() if before.get(path) != after.get(path)}


@dataclass(frozen=True, slots=True)
class WrappedRun:
    done: subprocess.CompletedProcess[str]
    seconds: float
    touched: set[str]  # files under HOME the run created, changed or removed


def run_wrapped(
    agent: str,
    argv: list[str],
    upstream: UpstreamServer,
    home: Path,
    work: Path,
    env: dict[str, str],
    path: tuple[Path, ...] = (),
    timeout: float = 300,
) -> WrappedRun:
    """`mcp-offload wrap AGENT ARGV` as a user runs it (HOME `home`, in `work`, the directories `path` first on PATH,
    this environment without any provider's, XDG or mcp-offload variables, plus `env`) with a gateway it starts in
    front of the scripted upstream; asserts it succeeded and named its gateway."""
    before = snapshot(home)
    upstreams = ["--anthropic-upstream", upstream.base_url, "--openai-upstream", upstream.openai_url,
                 "--gemini-upstream", upstream.base_url]  # fmt: skip
    full_env = {k: v for k, v in agent_env(**env).items() if not k.startswith(("XDG_", "MCP_OFFLOAD_")) or k in env}
    path_value = os.pathsep.join([*map(str, path), os.environ.get("PATH", "")])
    full_env.update(HOME=str(home), PATH=path_value, PWD=str(work))  # PWD as a shell sets it (opencode reads it)
    start = time.monotonic()
    done = subprocess.run([*WRAP, *upstreams, agent, *argv], env=full_env, cwd=work, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)  # fmt: skip
    seconds = time.monotonic() - start
    assert done.returncode == 0, f"{agent} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert f"mcp-offload wrap: {agent} uses the gateway at http://127.0.0.1:" in done.stderr
    return WrappedRun(done, seconds, changed(before, snapshot(home)))
