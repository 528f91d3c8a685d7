"""The request body: read once, capped while it streams in (a declared Content-Length over the cap was refused before
anything is read: `web/body_limit.py`, with the same message), then checked as a JSON object for the APIs. Failures
are `GatewayError`s (413, 415, 400); a client gone while sending is `ClientGone`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
from starlette.types import Receive

from mcp_offload.errors import reason_of
from mcp_offload.gateway.errors import GatewayError
from mcp_offload.web.body_limit import too_large


class ClientGone(Exception):
    """The client closed the connection: stop everything for this request."""


def parse_json(headers: Mapping[str, str], raw: bytes) -> dict[str, Any]:
    """The body of an API call as a JSON object. No Content-Type is read as JSON (boto3's `invoke_model` sends none
    unless asked; Bedrock takes the body as JSON by default); any other type than JSON is refused (415)."""
    content_type = headers.get("content-type", "")
    if content_type and not content_type.lower().startswith("application/json"):
        raise GatewayError(
            415, "unsupported_content_type", f"Content-Type must be application/json, not {content_type or 'absent'!r}."
        )
    return json_object(raw)


def json_object(raw: bytes) -> dict[str, Any]:
    """The body parsed as a JSON object (400 `invalid_json` when it is not JSON, or not an object)."""
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, "invalid_json", f"The request body is not valid JSON: {reason_of(exc)}.") from None
    if not isinstance(parsed, dict):
        raise GatewayError(400, "invalid_json", "The request body must be a JSON object.")
    return parsed


async def read_body(receive: Receive, limit: int) -> bytes:
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
            return b"".join(chunks)
