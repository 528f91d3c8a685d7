"""The coding agents `mcp-offload wrap` knows, one module each (everything about one agent in its own file: its
executable and package, the API it speaks, how it is pointed at the gateway), and `AGENTS`, the registry listing
them. Adding an agent: its module here, with an `AGENT` implementing `base.Agent`, and its line below (the order is
the order `wrap --list` shows). `generic` points any other agent by its provider's base-URL variable (`--api`)."""

from __future__ import annotations

from mcp_offload.cli.wrap.agents import aider, claude, cline, codex, copilot, gemini, openclaw, opencode, pi, qwen
from mcp_offload.cli.wrap.agents.base import Agent

AGENTS: dict[str, Agent] = {
    agent.name: agent
    for agent in (
        claude.AGENT,
        codex.AGENT,
        pi.AGENT,
        openclaw.AGENT,
        gemini.AGENT,
        opencode.AGENT,
        copilot.AGENT,
        cline.AGENT,
        qwen.AGENT,
        aider.AGENT,
    )
}

__all__ = ["AGENTS", "Agent"]
