"""The request body: read once, capped while it streams in (a declared Content-Length over the cap was refused before
anything is read: `web/body_limit.py`, with the same message), then checked as a JSON object for the APIs. A body of
`PARSE_MIN_BYTES` or more is parsed in an ingest worker process (`IngestPool.parse_json`): its parse would hold this
process's GIL, and so every other client's turn, for tens of milliseconds. Failures are `GatewayError`s (413, 415,
400); a client gone while sending is `ClientGone`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.types import Receive

from mcp_offload.core.ingest_pool import IngestPool, JsonInvalid
from mcp_offload.errors import reason_of
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.web.body_limit import too_large


class ClientGone(Exception):
    """The client closed the connection: stop everything for this request."""


class Unreadable(Exception):
    """The body is not a JSON object the API can read: `error` says why, `raw` is the body."""

    def __init__(self, error: GatewayError, raw: bytes) -> None:
        super().__init__(error.message)
        self.error = error
        self.raw = raw


async def parse_json(pool: IngestPool, headers: Mapping[str, str], chunks: list[bytes]) -> tuple[dict[str, Any], bytes]:
    """The body of an API call, as it arrived in `chunks`: as a JSON object, and its bytes (a big one parsed and
    joined in `pool`'s worker processes). No Content-Type is read as JSON (boto3's `invoke_model` sends none unless
    asked; Bedrock takes the body as JSON by default); any other type than JSON is refused (415). Raises
    `Unreadable`."""
    content_type = headers.get("content-type", "")
    if content_type and not content_type.lower().startswith("application/json"):
        error = GatewayError(
            415, "unsupported_content_type", f"Content-Type must be application/json, not {content_type or 'absent'!r}."
        )
        raise Unreadable(error, b"".join(chunks))
    try:
        parsed = await pool.parse_json(chunks)
    except JsonInvalid as exc:
        raise Unreadable(_invalid(exc.reason), exc.document) from None
    if parsed is not None:
        value, raw = parsed
    else:
        raw = b"".join(chunks)
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise Unreadable(_invalid(reason_of(exc)), raw) from None
    try:
        return _object(value), raw
    except GatewayError as error:
        raise Unreadable(error, raw) from None


def json_object(raw: bytes) -> dict[str, Any]:
    """The body parsed as a JSON object (400 `invalid_json` when it is not JSON, or not an object)."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _invalid(reason_of(exc)) from None
    return _object(parsed)


def _object(parsed: object) -> dict[str, Any]:
    if not isinstance(parsed, dict):
        raise GatewayError(400, "invalid_json", "The request body must be a JSON object.")
    return parsed


def _invalid(reason: str) -> GatewayError:
    return GatewayError(400, "invalid_json", f"The request body is not valid JSON: {reason}.")


async def read_body(receive: Receive, limit: int) -> bytes:
    return b"".join(await read_chunks(receive, limit))


async def read_chunks(receive: Receive, limit: int) -> list[bytes]:
    """The body as it arrived, in pieces (joining 20 MB holds the GIL: `parse_json` has them joined elsewhere)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            refusal = too_large(size, limit, so_far=True)
            raise GatewayError(refusal.status, refusal.code, refusal.message)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks
