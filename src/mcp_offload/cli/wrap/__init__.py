"""`mcp-offload wrap`: run a coding agent through the gateway in one command. Everything only `wrap` uses lives here:
`command` (the subcommand: arguments, the gateway it reuses or starts, the run, `--list`, `--print-env`) · `agents/`
(one module per agent: its package, the API it speaks, how it is pointed at the gateway; and the registry) ·
`agent_process` (the agent as our child: stdio, terminal, signals and exit status passed through)."""

from mcp_offload.cli.wrap.command import main

__all__ = ["main"]
