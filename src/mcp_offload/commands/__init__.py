"""The CLI's subcommands, one module each, shaped `add_parser(subparsers)` + `run(args) -> int`."""
