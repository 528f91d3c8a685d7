"""JSON-lines logs (logs.py): one object per line with the record's `fields`, exceptions included."""

from __future__ import annotations

import json
import logging
import sys

from mcp_offload.logs import JsonLogFormatter


def test_a_record_becomes_one_json_line_with_its_fields() -> None:
    record = logging.LogRecord("mcp_offload.serve.http", logging.INFO, __file__, 1, "%s %s", ("GET", "/mcp"), None)
    record.fields = {"status": 200, "ms": 1.5}
    line = JsonLogFormatter().format(record)
    assert "\n" not in line
    data = json.loads(line)
    assert data["msg"] == "GET /mcp" and data["logger"] == "mcp_offload.serve.http" and data["level"] == "INFO"
    assert data["status"] == 200 and data["ms"] == 1.5 and "exc" not in data
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        failed = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info())
    assert "RuntimeError: boom" in json.loads(JsonLogFormatter().format(failed))["exc"]
