"""Answers on stdio for lines that are not JSON-RPC messages, so a client never waits for its own timeout.

The SDK's stdio reader hands such a line to the server as an exception, which the server only logs at debug
level: the request gets no reply. `AnsweringReadStream` sits between the two and answers it instead, as the HTTP
transport does: `-32700` (Parse error) when the line is not JSON the SDK's parser accepts (a lone surrogate escape,
a 5,000-digit integer, 100,000-deep nesting, plain garbage), `-32600` (Invalid Request) when it is JSON but not a
JSON-RPC message (`"params": []`, no `method`). The reply carries the request's id when it can be recovered from
the line, else `null` (JSON-RPC 2.0 §5). A malformed line that reads as a response (a `result` or an `error`, no
`method`) gets no reply: nobody waits for one.

The id is recovered without the full parse that just failed: `json.loads` first (it accepts lone surrogates), then,
for lines it cannot take (huge integers, deep nesting), a scan of the top-level object that skips every other
value without recursion.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from mcp_offload.serve.stream_front import ReceiveFront

log = logging.getLogger(__name__)

RequestId = int | str
_NO_ID = object()
_STRING_END = re.compile(r'["\\]')
_VALUE_STOP = re.compile(r'["\[\]{},]')
_SPACE = re.compile(r"\s*")


def rejection_for(exc: Exception) -> types.JSONRPCError | None:
    """The JSON-RPC error answering the line behind `exc` (the SDK reader's exception for it), or None when no
    answer is due (a malformed response)."""
    line = _line_of(exc)
    parse_error = _is_parse_error(exc)
    if line is not None and _reads_as_response(line):
        return None
    request_id = request_id_of(line) if line is not None else None
    if parse_error:
        code, message = types.PARSE_ERROR, f"Parse error: {_parse_detail(exc, line)}"
    else:
        code, message = types.INVALID_REQUEST, f"Invalid Request: {_invalid_detail(exc)}"
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def request_id_of(line: str) -> RequestId | None:
    """The top-level `"id"` of a JSON-RPC line, when it is a string or an integer (not a bool), else None."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        found = _scan_top_level_id(line)
    else:
        found = data.get("id", _NO_ID) if isinstance(data, dict) else _NO_ID
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    return found


def _scan_top_level_id(line: str) -> object:
    """The top-level "id" value of a JSON object text that `json.loads` refused, found by skipping the other
    values without parsing them; `_NO_ID` when there is none or the text is not an object."""
    decoder = json.JSONDecoder()
    pos = _SPACE.match(line, 0).end()  # type: ignore[union-attr]  # \s* always matches
    if not line.startswith("{", pos):
        return _NO_ID
    pos += 1
    while True:
        pos = _SPACE.match(line, pos).end()  # type: ignore[union-attr]
        if not line.startswith('"', pos):
            return _NO_ID
        try:
            key, pos = decoder.raw_decode(line, pos)
        except ValueError:
            return _NO_ID
        pos = _SPACE.match(line, pos).end()  # type: ignore[union-attr]
        if not line.startswith(":", pos):
            return _NO_ID
        pos = _SPACE.match(line, pos + 1).end()  # type: ignore[union-attr]
        if key == "id":
            try:
                return decoder.raw_decode(line, pos)[0]
            except (ValueError, RecursionError):
                return _NO_ID
        pos = _skip_value(line, pos)
        if pos < 0:
            return _NO_ID
        pos = _SPACE.match(line, pos).end()  # type: ignore[union-attr]
        if not line.startswith(",", pos):
            return _NO_ID
        pos += 1


def _skip_value(text: str, pos: int) -> int:
    """The index just past the JSON value starting at `pos` (not validated, no recursion), or -1."""
    depth = 0
    while pos < len(text):
        found = _VALUE_STOP.search(text, pos)
        if found is None:
            return len(text) if depth == 0 else -1
        char, pos = found.group(), found.start()
        if char == '"':
            pos = _skip_string(text, pos + 1)
            if pos < 0:
                return -1
            if depth == 0:
                return pos
            continue
        if char in "[{":
            depth += 1
        elif char in "]}":
            if depth == 0:
                return pos  # the end of the enclosing object: a scalar value ended before it
            depth -= 1
            if depth == 0:
                return pos + 1
        elif depth == 0:  # "," after a scalar
            return pos
        pos += 1
    return -1


def _skip_string(text: str, pos: int) -> int:
    """The index just past the closing quote of a string whose body starts at `pos`, or -1."""
    while True:
        found = _STRING_END.search(text, pos)
        if found is None:
            return -1
        if found.group() == '"':
            return found.end()
        pos = found.end() + 1  # a backslash escapes the next character


def _errors(exc: Exception) -> list[dict[str, Any]]:
    if isinstance(exc, ValidationError):
        return list(exc.errors(include_url=False))  # type: ignore[arg-type]
    return []


def _line_of(exc: Exception) -> str | None:
    """The line the SDK failed to parse: pydantic keeps it as the input of a JSON error, and the decoded object
    as the input of a structural one (re-serialised here, only to read its id)."""
    for error in _errors(exc):
        value = error.get("input")
        if error.get("type") == "json_invalid" and isinstance(value, str | bytes):
            return value.decode("utf-8", "replace") if isinstance(value, bytes) else value
    for error in _errors(exc):
        value = error.get("input")
        if isinstance(value, dict):
            try:
                return json.dumps(value)
            except (TypeError, ValueError, RecursionError):
                return None
    return None


def _is_parse_error(exc: Exception) -> bool:
    errors = _errors(exc)
    return not errors or any(error.get("type") == "json_invalid" for error in errors)


def _reads_as_response(line: str) -> bool:
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and "method" not in data and ("result" in data or "error" in data)


def _parse_detail(exc: Exception, line: str | None) -> str:
    for error in _errors(exc):
        if error.get("type") == "json_invalid":
            reason = str(error.get("ctx", {}).get("error", error.get("msg", "")))
            if line is not None and "hex escape" in reason and re.search(r"\\u[dD][89a-fA-F]", line):
                return f"{reason} (a lone surrogate escape such as \\ud800 is not valid here; send the text as UTF-8)"
            return reason or "the line is not valid JSON"
    return f"the line is not a JSON-RPC message ({type(exc).__name__})"


def _invalid_detail(exc: Exception) -> str:
    errors = _errors(exc)
    for error in errors:
        if error.get("type") == "dict_type" and error.get("loc", ())[-1:] == ("params",):
            return '"params" must be an object'
    if errors:
        first = errors[0]
        where = ".".join(str(part) for part in first.get("loc", ()))
        return f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid"))
    return "not a JSON-RPC message"


class AnsweringReadStream(ReceiveFront):
    """The server's read stream: messages pass through; an unparsable line is answered on `write` and dropped."""

    def __init__(self, inner: Any, write: Any) -> None:
        super().__init__(inner)
        self._write = write

    async def receive(self) -> SessionMessage:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            answer = rejection_for(item)
            log.info("stdio: %s", answer.error.message if answer is not None else "a malformed response, ignored")
            if answer is not None:
                await self._write.send(SessionMessage(answer))
