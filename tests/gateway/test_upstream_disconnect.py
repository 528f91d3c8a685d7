"""An upstream that accepts the connection and closes it without an answer: the client gets the gateway's 502 in its
API's format, one sentence each, and httpcore's "Server disconnected without sending a response." inside it keeps one
period (it came out as "response.. Check")."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import anthropic
import pytest

from mcp_offload.errors import reason_of
from support.gateway_server import StartGateway


@pytest.fixture
def hang_up_upstream() -> Iterator[str]:
    """A loopback port that accepts each connection, reads the request and closes without a byte of answer."""
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
                conn.settimeout(2)
                with contextlib.suppress(OSError):
                    conn.recv(65536)

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


def test_an_upstream_hanging_up_is_one_502_sentence_without_a_double_period(
    hang_up_upstream: str, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(hang_up_upstream)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model="claude-sonnet-4-6", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    message = caught.value.message
    assert caught.value.status_code == 502
    assert "Server disconnected without sending a response. Check --anthropic-upstream" in message, message
    assert ".." not in message


@pytest.mark.parametrize(
    ("error", "clause"),
    [
        (OSError("Server disconnected without sending a response."), "Server disconnected without sending a response"),
        (ValueError("no period"), "no period"),
        (ValueError(""), "ValueError"),
        (ValueError("wait..."), "wait..."),
    ],
)
def test_reason_of_leaves_the_period_to_the_sentence(error: Exception, clause: str) -> None:
    assert reason_of(error) == clause
