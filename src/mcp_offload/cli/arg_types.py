"""The command line's argparse pieces: a parser whose errors are one line, and types for values people write with
units or ranges (durations, sizes, ports, upstream URLs).

Each type turns the ValueError of mcp_offload.units into `prog: error: argument --x: …` on one line, exit 2, so a
bad value stops the command before anything starts (a port of 70000 is refused, never bound as 4464).
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from mcp_offload.units import check_url_port, parse_duration, parse_port, parse_size


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (`prog: error: what was wrong (see prog --help)`, exit 2): the usage block
    argparse prints first buries the line that matters. Subparsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def duration(text: str) -> float:
    """`90s`, `15m`, `2h`, `3d` (a bare number is seconds)."""
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def size(text: str) -> int:
    """`512`, `64KB`, `1MiB`, `1GiB` (a bare number is bytes)."""
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port(text: str) -> int:
    """A TCP port to listen on, 1-65535."""
    try:
        return parse_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def http_url(text: str) -> str:
    """An http:// or https:// base URL whose port, if it names one, is 1-65535."""
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"{text[:100]!r} is not an http:// or https:// URL")
    try:
        check_url_port(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
