"""Overload: more big turns at once than the gateway admits (`gateway_max_big_turns`, admission.py). One more is shed
at once, before its body is read, with the API's own "overloaded" answer and a Retry-After, which the real SDKs raise
as their overload error type: anthropic's OverloadedError (529 overloaded_error), openai's InternalServerError (503),
google-genai's ServerError (503 UNAVAILABLE). The turn holding the place goes through whole; once it ends, the next
big turn is admitted; small turns are never held back; /healthz counts what was shed."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from llm_upstream import UpstreamServer
from llm_upstream.script import reply
from mcp_offload.gateway.admission import PARSE_MIN_BYTES
from support import HANG_TIMEOUT_S
from support.gateway_server import GatewayServer, StartGateway
from support.llm_conversations import BASH_ANTHROPIC, anthropic_messages, chat_messages, gemini_contents

MODEL = "claude-sonnet-4-6"


def _big_log() -> str:
    lines = [f"2026-11-21T10:00:{i % 60:02d}Z INFO api: request {i} handled in {i % 97} ms" for i in range(14_000)]
    log = "\n".join(lines)
    assert len(log) > PARSE_MIN_BYTES
    return log


def _health(gateway: GatewayServer) -> dict[str, Any]:
    answer: dict[str, Any] = httpx2.get(gateway.base_url + "/healthz").json()
    return answer


class HeldTurn:
    """A big Anthropic turn whose body stops after its first bytes until `release()`: it holds its place (its
    Content-Length says it is big) for as long as the test needs."""

    def __init__(self, gateway: GatewayServer, body: bytes) -> None:
        self._go = threading.Event()
        self.status: int | None = None

        def pieces() -> Iterator[bytes]:
            yield body[:1000]
            self._go.wait(HANG_TIMEOUT_S)
            yield body[1000:]

        def send() -> None:
            headers = {"content-type": "application/json", "content-length": str(len(body)),
                       "x-api-key": "sk-ant-held", "anthropic-version": "2023-06-01"}  # fmt: skip
            response = httpx2.post(gateway.base_url + "/v1/messages", content=pieces(), headers=headers, timeout=600)
            self.status = response.status_code

        self._thread = threading.Thread(target=send, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while _health(gateway)["big_turns"]["in_progress"] < 1:
            assert time.monotonic() < deadline, "the held turn never took its place"
            time.sleep(0.02)

    def release(self) -> int | None:
        self._go.set()
        self._thread.join(HANG_TIMEOUT_S)
        return self.status


@pytest.fixture
def held(upstream: UpstreamServer, start_gateway: StartGateway) -> Iterator[tuple[GatewayServer, HeldTurn]]:
    upstream.use(lambda turn: reply("done"))
    gateway = start_gateway(upstream, settings={"gateway_max_big_turns": 1})
    body = json.dumps({"model": MODEL, "max_tokens": 64, "messages": anthropic_messages(_big_log()),
                       "tools": [BASH_ANTHROPIC]}).encode()  # fmt: skip
    turn = HeldTurn(gateway, body)
    try:
        yield gateway, turn
    finally:
        turn.release()


def test_anthropic_sdk_sees_overloaded_error(held: tuple[GatewayServer, HeldTurn]) -> None:
    gateway, turn = held
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-test", max_retries=0)
    request: Any = {"model": MODEL, "max_tokens": 64, "messages": anthropic_messages(_big_log()),
                    "tools": [BASH_ANTHROPIC]}  # fmt: skip
    with pytest.raises(anthropic.OverloadedError) as raised:
        client.messages.create(**request)
    assert raised.value.status_code == 529
    body: Any = raised.value.body
    assert body["type"] == "error" and body["error"]["type"] == "overloaded_error"
    assert 1 <= int(raised.value.response.headers["retry-after"]) <= 60
    assert "gateway_max_big_turns" in raised.value.message
    # small turns are never held back
    small = client.messages.create(model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "hi"}])
    assert small.content[0].type == "text"
    assert _health(gateway)["big_turns"] == {"in_progress": 1, "shed": 1}
    # the held turn goes through whole once its body is in; then the next big turn is admitted
    assert turn.release() == 200
    assert _health(gateway)["big_turns"]["in_progress"] == 0
    message = client.messages.create(**request)
    assert message.content[0].type == "text"


def test_openai_sdk_sees_503(held: tuple[GatewayServer, HeldTurn]) -> None:
    gateway, _ = held
    client = openai.OpenAI(base_url=gateway.openai_url, api_key="sk-test", max_retries=0)
    with pytest.raises(openai.InternalServerError) as raised:
        client.chat.completions.create(model="gpt-5", messages=chat_messages(_big_log()))
    assert raised.value.status_code == 503
    assert raised.value.code == "overloaded" and raised.value.type == "server_error"
    assert 1 <= int(raised.value.response.headers["retry-after"]) <= 60


def test_gemini_sdk_sees_unavailable(held: tuple[GatewayServer, HeldTurn]) -> None:
    gateway, _ = held
    options = types.HttpOptions(base_url=gateway.base_url, retry_options=types.HttpRetryOptions(attempts=1))
    client = genai.Client(api_key="gemini-test-key", http_options=options)
    contents: Any = gemini_contents(_big_log())
    with pytest.raises(genai_errors.ServerError) as raised:
        client.models.generate_content(model="gemini-2.5-flash", contents=contents)
    assert raised.value.code == 503 and raised.value.status == "UNAVAILABLE"
    assert raised.value.response is not None
    assert _health(gateway)["big_turns"]["shed"] == 1
