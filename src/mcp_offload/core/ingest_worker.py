"""An ingest worker process (`python -m mcp_offload.core.ingest_worker`; started by `ingest_pool`, never by hand).

Reads its settings (one frame), loads the tokenizer, answers with an empty frame, then prepares one output per
request frame, `(text, name, source, handle)`, answering `(True, Prepared)` or `(False, exception)` until its input
closes. stdout carries only frames: logging goes to stderr.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
from typing import IO

from mcp_offload.core import ingest_wire


def main() -> None:
    # Ctrl-C reaches the whole process group: the serving process shuts down and closes our input, which ends us
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    try:
        _serve(stdin, stdout)
    except (EOFError, BrokenPipeError):
        # the serving process closed our pipes (it stopped, or gave up on us while we loaded): nothing to say, and
        # no flush at exit of a pipe nobody reads
        os._exit(0)


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> None:
    from mcp_offload.core.ingest import prepare_text
    from mcp_offload.tokens import load_counter

    settings = pickle.loads(ingest_wire.receive(stdin))
    tokens = load_counter(settings.encoding)
    ingest_wire.send(stdout, b"")
    while True:
        text, name, source, handle = pickle.loads(ingest_wire.receive(stdin))
        try:
            reply = pickle.dumps((True, prepare_text(settings, tokens, text, name, source, handle)), protocol=5)
        except Exception as exc:  # the caller raises it as if prepared in its own thread
            try:
                reply = pickle.dumps((False, exc), protocol=5)
            except Exception:  # an exception that does not pickle: its message, as a plain error
                reply = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")), protocol=5)
        del text
        ingest_wire.send(stdout, reply)


if __name__ == "__main__":
    main()
