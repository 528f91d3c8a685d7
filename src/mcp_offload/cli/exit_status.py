"""The command line's one mapping from an error to a line on stderr and an exit status.

- 0: done
- 1: `CommandDeclined`: the command did nothing on purpose or could not do it (an unknown handle, no confirmation,
  an unreadable savings record); nothing was changed
- 1 also: a store location that names no store (`StoreLocationError`: an unknown URL scheme, no reachable cluster
  node, a cluster URL for a single node or the reverse); nothing was created
- 2: `OperatorError` (a bad flag, environment variable or config file, a refused exposure) or `OffloadError` (the
  store refused: full, unreachable, an invalid handle); nothing was changed
- 130: interrupted (Ctrl-C), or stdout closed under us (`… | head`)

Every subcommand's `main` and the server's entry point run their work through `exit_status`, so the same error
gives the same line and status everywhere, and no traceback reaches the terminal for these.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from mcp_offload.errors import OffloadError, OperatorError

DECLINED = 1
FAILED = 2
INTERRUPTED = 130


class CommandDeclined(Exception):
    """The command did nothing on purpose, or could not do it; the message says why. Exit status 1."""


def exit_status(run: Callable[[], int | None], *, prog: str = "mcp-offload") -> int:
    """Run a command; its return value (None: 0) is the status, an error becomes `prog: message` on stderr."""
    try:
        return run() or 0
    except CommandDeclined as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return DECLINED
    except (OperatorError, OffloadError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        status = getattr(exc, "exit_status", FAILED)  # a store location naming no store: 1 (store/location.py)
        return status if isinstance(status, int) else FAILED
    except BrokenPipeError:
        _discard_stdout()
        return INTERRUPTED
    except KeyboardInterrupt:
        return INTERRUPTED


def _discard_stdout() -> None:
    """The reader went away (`… | head`): what is still buffered goes nowhere, so Python's own flush at exit
    does not raise the same BrokenPipeError again (with a traceback-like "Exception ignored" line)."""
    try:
        stdout = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (captured, replaced): nothing to flush to a pipe
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stdout)
    finally:
        os.close(devnull)
