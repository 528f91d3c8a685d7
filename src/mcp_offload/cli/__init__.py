"""The command line: the entry point, its subcommands, the demo, and the client configs it reads and writes.

`dispatch.main` is the one entry point (`mcp-offload`, `python -m mcp_offload`): flags and environment become
Settings, and a command line that starts with a subcommand's name goes to that subcommand's module
(`import_config`, `outputs`, `stats`, `demo`), each exposing `main(argv) -> exit status`.

`main` here imports the dispatcher only when called, so importing one subcommand module stays light.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> None:
    """Run the command line (the `mcp-offload` console script)."""
    from mcp_offload.cli.dispatch import main as dispatch

    dispatch(argv)
