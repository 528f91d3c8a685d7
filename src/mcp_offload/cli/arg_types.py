"""The command line's argparse pieces: a parser whose errors are one line, and types for values people write with
units or ranges (durations, sizes, ports, upstream URLs).

Each type turns the ValueError of mcp_offload.units into `prog: error: argument --x: …` on one line, exit 2, so a
bad value stops the command before anything starts (a port of 70000 is refused, never bound as 4464).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NoReturn, TypeVar

from mcp_offload.units import check_url_port, parse_duration, parse_port, parse_size
from mcp_offload.web.workers import check_workers

T = TypeVar("T")


class OneLineParser(argparse.ArgumentParser):
    """argparse with a one-line error (`prog: error: what was wrong (see prog --help)`, exit 2): the usage block
    argparse prints first buries the line that matters. Subparsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _argument_type(parse: Callable[[str], T], doc: str) -> Callable[[str], T]:
    """`parse` as an argparse type: its ValueError becomes argparse's one-line error."""

    def checked(text: str) -> T:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    checked.__doc__ = doc
    checked.__name__ = checked.__qualname__ = parse.__name__.removeprefix("parse_").removeprefix("check_")
    return checked


duration = _argument_type(parse_duration, "`90s`, `15m`, `2h`, `3d` (a bare number is seconds).")
size = _argument_type(parse_size, "`512`, `64KB`, `1MiB`, `1GiB` (a bare number is bytes).")
port = _argument_type(parse_port, "A TCP port to listen on, 1-65535.")
workers = _argument_type(check_workers, "A whole number of worker processes, 1 or more.")
_url_port = _argument_type(check_url_port, "A URL's port, if it names one, is 1-65535.")


def http_url(text: str) -> str:
    """An http:// or https:// base URL whose port, if it names one, is 1-65535."""
    if not text.startswith(("http://", "https://")):
        raise argparse.ArgumentTypeError(f"{text[:100]!r} is not an http:// or https:// URL")
    _url_port(text)
    return text
