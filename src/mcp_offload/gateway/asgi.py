"""The few ASGI pieces the gateway's endpoints write by hand (they answer with the upstream's own bytes and headers):
a whole answer, the query string."""

from __future__ import annotations

from starlette.types import Scope, Send

JSON_HEADERS = [(b"content-type", b"application/json")]


async def send_bytes(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def query_string(scope: Scope) -> str:
    raw = scope.get("query_string", b"")
    return raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)
