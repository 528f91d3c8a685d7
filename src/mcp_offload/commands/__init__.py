"""The shell-side subcommands (`mcp-offload import-config`, `mcp-offload outputs …`): one module each.

Each exposes `main(argv) -> exit status`; `cli.py` dispatches to it when the command line starts with its name.
"""
