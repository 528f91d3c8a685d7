"""A subcommand on a parser of its own (`mcp-offload gateway`, `mcp-offload stats`): the command's `add_parser`
under `mcp-offload`, so the options the dispatcher lets precede the command's name parse the same, and its `main`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from mcp_offload.cli.arg_types import OneLineParser
from mcp_offload.cli.exit_status import exit_status

AddParser = Callable[[Any], argparse.ArgumentParser]  # takes argparse's _SubParsersAction, which is private


def own_parser(add_parser: AddParser) -> argparse.ArgumentParser:
    """The command's parser under `mcp-offload`."""
    return add_parser(OneLineParser(prog="mcp-offload").add_subparsers(dest="command", required=True))


def main_on_own_parser(
    argv: list[str], add_parser: AddParser, run: Callable[[argparse.Namespace], int | None], prog: str
) -> int:
    """`run` with `argv` parsed by the command's own parser; its exit status (`exit_status`, errors as `prog: …`)."""
    args = own_parser(add_parser).parse_args(argv)
    return exit_status(lambda: run(args), prog=prog)
