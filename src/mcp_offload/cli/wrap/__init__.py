"""`mcp-offload wrap`: run a coding agent through the gateway in one command. Everything only `wrap` uses lives here:
`command` (the subcommand: arguments, the gateway it reuses or starts, the run) · `agents` (how each agent is pointed
at the gateway) · `gemini_home` (Gemini CLI's own home when its settings select no auth type) · `agent_process` (the
agent as our child: stdio, terminal, signals and exit status passed through)."""

from mcp_offload.cli.wrap.command import main

__all__ = ["main"]
