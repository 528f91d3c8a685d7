"""An upstream that accepts the connection and closes it without an answer: the client gets the gateway's 502 in its
API's format, one sentence each, and httpcore's "Server disconnected without sending a response." inside it keeps one
period (it came out as "response.. Check"). One that resets the connection is named for what happened ("Connection
reset by peer"), not for the exception's class (httpx's ReadError has no text of its own)."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

import anthropic
import pytest

from mcp_offload.errors import reason_of
from support.gateway_server import StartGateway


def _read_request(conn: socket.socket) -> None:
    """Read one whole HTTP request (headers, then a Content-Length body). A close with bytes of the request still
    unread would be sent as a reset, not as the orderly end of the connection the test is about (seen under load:
    the body came in a second segment)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextlib.contextmanager
def _upstream(*, reset: bool) -> Iterator[str]:
    """A loopback port that accepts each connection, reads the request and closes without a byte of answer: in
    order, or (`reset`) with a TCP reset."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(10)
                with contextlib.suppress(OSError):
                    _read_request(conn)
                if reset:  # no linger: the close sends RST
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stopping.set()
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept(); a close alone leaves it blocked (Linux)
        listener.close()
        thread.join(5)
        assert not thread.is_alive()


@pytest.mark.parametrize(
    ("reset", "clause"),
    [(False, "Server disconnected without sending a response"), (True, "Connection reset by peer")],
    ids=["hang-up", "reset"],
)
def test_an_upstream_closing_without_an_answer_is_one_502_sentence_naming_what_happened(
    reset: bool, clause: str, start_gateway: StartGateway
) -> None:
    with _upstream(reset=reset) as upstream:
        gateway = start_gateway(upstream)
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as caught:
            client.messages.create(
                model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
    message = caught.value.message
    assert caught.value.status_code == 502
    assert f": {clause}. Check --anthropic-upstream" in message, message
    assert ".." not in message and "ReadError" not in message


@pytest.mark.parametrize(
    ("error", "clause"),
    [
        (OSError("Server disconnected without sending a response."), "Server disconnected without sending a response"),
        (ValueError("no period"), "no period"),
        (ValueError(""), "ValueError"),
        (ValueError("wait..."), "wait..."),
        (ConnectionResetError(104, "Connection reset by peer"), "Connection reset by peer"),
        (FileNotFoundError(2, "No such file or directory", "/x"), "[Errno 2] No such file or directory: '/x'"),
    ],
)
def test_reason_of_leaves_the_period_to_the_sentence(error: Exception, clause: str) -> None:
    assert reason_of(error) == clause


def test_reason_of_an_error_without_text_is_its_cause() -> None:
    try:
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except OSError as exc:
            raise EOFError from exc  # the empty middle of a chain (anyio's BrokenResourceError)
    except EOFError as middle:
        outer = RuntimeError()
        outer.__cause__ = middle
    assert reason_of(outer) == "Connection reset by peer"
    assert reason_of(RuntimeError()) == "RuntimeError"  # nothing below: the class name
