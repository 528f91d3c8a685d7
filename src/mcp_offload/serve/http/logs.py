"""JSON-lines logging for the HTTP transports: `JsonLogFormatter` and the switch that puts it on stderr.

A record's `fields` (passed as `extra={"fields": {...}}`, as the access and request logs do) become keys of its line.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any


class JsonLogFormatter(logging.Formatter):
    """A JSON object per line: time, level, logger, message, and the record's `fields` (passed as `extra=`)."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            data.update(fields)
        if record.exc_info:
            data["exc"] = self.formatException(record.exc_info)
        return json.dumps(data, default=str)


def use_json_logs() -> None:
    for handler in logging.getLogger().handlers:
        handler.setFormatter(JsonLogFormatter())


def log_to_stderr_as_json() -> None:
    """Structured logs on stderr for the HTTP transports (stdout is free there, but stderr is the convention)."""
    if not logging.getLogger().handlers:
        logging.basicConfig(stream=sys.stderr)
    use_json_logs()
