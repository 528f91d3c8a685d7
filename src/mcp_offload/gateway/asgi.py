"""The few ASGI pieces the gateway's endpoints write by hand (they answer with the upstream's own bytes and headers):
a whole answer, the query string, the request as the providers read it."""

from __future__ import annotations

from starlette.types import Scope, Send

from mcp_offload.providers.base import IncomingRequest

JSON_HEADERS = [(b"content-type", b"application/json")]


async def send_bytes(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


def query_string(scope: Scope) -> str:
    raw = scope.get("query_string", b"")
    return raw.decode("latin-1") if isinstance(raw, bytes) else str(raw)


def header_pairs(scope: Scope) -> list[tuple[str, str]]:
    """The request's headers, names lower-case, in order (repeats kept)."""
    return [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", ())]


INCOMING_KEY = "mcp_offload.incoming"  # in the scope: the request as the providers read it, made once


def incoming_request(scope: Scope) -> IncomingRequest:
    """The request line and headers as the providers read them (the header map keeps a repeated header's last);
    made once per request (the route, the endpoint and a refusal all ask)."""
    incoming: IncomingRequest | None = scope.get(INCOMING_KEY)
    if incoming is None:
        incoming = IncomingRequest(scope["method"], scope["path"], query_string(scope), dict(header_pairs(scope)))
        scope[INCOMING_KEY] = incoming
    return incoming
