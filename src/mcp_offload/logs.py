"""Logs on stderr, one JSON object per line, for every transport and everything the process says while it serves:
our own records, the proxied servers' stderr lines (`{"logger": "mcp_offload.upstream", "server": …}`), config
reloads, the startup line. stdout stays the MCP wire on stdio.

A record's `fields` (passed as `extra={"fields": {...}}`, as the access and request logs do) become keys of its line.
Levels mean what they say: INFO for what happens normally (startup, an upstream ready, its stderr), WARNING for
what an operator should look at, ERROR for what failed. Other libraries log at WARNING and up unless DEBUG is asked.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

OUR_LOGGER = "mcp_offload"
_PROCESS_FIELDS: dict[str, Any] = {}  # on every line of a `--workers` worker: its index and pid (`tag_worker`)


def tag_worker(index: int) -> None:
    """Every line this process logs from now on names the worker (`"worker": index, "pid": …`), so the lines of
    N processes sharing one stderr can be told apart."""
    _PROCESS_FIELDS.update(worker=index, pid=os.getpid())


class JsonLogFormatter(logging.Formatter):
    """A JSON object per line: time, level, logger, message, and the record's `fields` (passed as `extra=`)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        data.update(_PROCESS_FIELDS)
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            data.update(fields)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


class _StderrHandler(logging.Handler):
    """Writes each record to whatever sys.stderr is at the time (tests swap it), one line, flushed."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: logging must never take the server down
            pass
        except Exception:
            self.handleError(record)


def log_to_stderr(level: str = "INFO") -> None:
    """JSON lines on stderr: our loggers at `level`, other libraries at WARNING (or DEBUG when `level` is).
    Idempotent: a second call only changes the levels."""
    root = logging.getLogger()
    if not any(isinstance(h, _StderrHandler) for h in root.handlers):
        for handler in list(root.handlers):
            if isinstance(handler, logging.StreamHandler) and getattr(handler, "stream", None) in (
                sys.stderr,
                sys.__stderr__,
            ):
                root.removeHandler(handler)
        handler = _StderrHandler()
        handler.setFormatter(JsonLogFormatter())
        root.addHandler(handler)
    logging.captureWarnings(True)  # Python warnings (a library's deprecations) as records too, not bare text
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric if numeric == logging.DEBUG else max(numeric, logging.WARNING))
    logging.getLogger(OUR_LOGGER).setLevel(numeric)
