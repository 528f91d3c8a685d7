"""A turn's third step: the client's answer.

- A stream (the call's framing, status 200): spliced through the retrieval loop when the turn loops (only the
  retrieval calls and the terminal events are held back; pings while the gateway works), else relayed as it
  arrives with its usage read on the side (loop.py). Written through one `emit`, which turns a client gone into
  `ClientGone`.
- Anything else is read whole: a JSON answer goes through the loop when the turn loops (the merged answer is what
  the client gets), else its usage is read; in Gemini's array mode a 200 is wrapped as a 1-item array. Errors and
  other answers go to the client as the upstream sent them.
"""

from __future__ import annotations

import anyio
import httpx2
import orjson
from starlette.types import Message, Send

from mcp_offload.gateway.asgi import send_bytes
from mcp_offload.gateway.loop import loop_json, loop_stream, relay_stream
from mcp_offload.gateway.request_body import ClientGone
from mcp_offload.gateway.turn import Turn
from mcp_offload.gateway.upstream import response_headers


async def answer_turn(turn: Turn, response: httpx2.Response, send: Send) -> None:
    content_type = response.headers.get("content-type", "")
    if turn.exchange.stream and response.status_code == 200 and content_type.startswith(turn.framing.media_type):
        await _answer_stream(turn, response, send)
    else:
        await _answer_whole(turn, response, content_type, send)


async def _answer_stream(turn: Turn, response: httpx2.Response, send: Send) -> None:
    lock = anyio.Lock()

    async def emit(chunk: bytes) -> None:
        async with lock:
            try:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            except OSError:
                raise ClientGone from None

    try:
        start: Message = {
            "type": "http.response.start",
            "status": 200,
            "headers": response_headers(response.headers, decoded=True),
        }
        await send(start)
    except BaseException:
        await response.aclose()
        raise
    if turn.loops:
        await loop_stream(turn, response, emit)
    else:
        await relay_stream(turn, response, emit)
    async with lock:
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _answer_whole(turn: Turn, response: httpx2.Response, content_type: str, send: Send) -> None:
    exchange = turn.exchange
    try:
        answer = await response.aread()
    finally:
        await response.aclose()
    if response.status_code == 200 and content_type.startswith("application/json"):
        try:
            parsed = orjson.loads(answer)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict):
            if turn.loops:
                exchange.status, answer = await loop_json(turn, parsed)
            else:
                exchange.report.usage = turn.dialect.usage_of(parsed)
    if turn.plan.as_array and exchange.status == 200:
        answer = b"[" + answer + b"]"
    await send_bytes(send, exchange.status, response_headers(response.headers, decoded=True), answer)
