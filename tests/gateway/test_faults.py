"""Bad input and failures, each answered in the API's own error format, with no traceback and no hang: malformed
JSON, wrong content type, bodies over the cap, unknown fields (the upstream decides), an unreachable upstream, a
stream cut halfway, a client that disconnects mid-stream (the upstream sees it), the store down (fail-open, and
fail-closed when asked), a rewritten request the upstream refuses (retried unmodified, session bypassed), the
gateway's own token and the Host check."""

from __future__ import annotations

import json
import time
from typing import Any, cast

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam
from openai.types.chat import ChatCompletionToolMessageParam

from llm_upstream import ApiError, Turn, UpstreamServer, reply
from mcp_offload.cachesafe.policy import RewritePolicy
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_ANTHROPIC, HANDLE, anthropic_messages, build_log, chat_messages
from support.store import RedisServer, have_redis_server

MODEL = "claude-sonnet-4-6"
ANTHROPIC_HEADERS = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}


def _post(url: str, content: bytes, headers: dict[str, str]) -> httpx2.Response:
    return httpx2.post(url, content=content, headers=headers, timeout=30)


def _anthropic_error(response: httpx2.Response, status: int, kind: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    assert "Traceback" not in response.text
    return str(body["error"]["message"])


def _openai_error(response: httpx2.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == code, error
    return str(error["message"])


def test_bad_bodies_in_each_api_format(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gateway = start_gateway(upstream, max_body_bytes=64 * 1024)
    json_headers = {**ANTHROPIC_HEADERS, "content-type": "application/json"}
    message = _anthropic_error(_post(gateway.base_url + "/v1/messages", b'{"model": ', json_headers), 400,
                               "invalid_request_error")  # fmt: skip
    assert "not valid JSON" in message
    _anthropic_error(_post(gateway.base_url + "/v1/messages", b"[1]", json_headers), 400, "invalid_request_error")
    text_headers = {**ANTHROPIC_HEADERS, "content-type": "text/plain"}
    assert "application/json" in _anthropic_error(
        _post(gateway.base_url + "/v1/messages", b"{}", text_headers), 415, "invalid_request_error"
    )
    big = json.dumps({"model": MODEL, "max_tokens": 1, "messages": [{"role": "user", "content": "x" * 70_000}]})
    _anthropic_error(_post(gateway.base_url + "/v1/messages", big.encode(), json_headers), 413, "request_too_large")

    def chunked() -> Any:  # no Content-Length: the cap holds while reading
        for _ in range(20):
            yield b" " * 8192

    response = httpx2.post(gateway.base_url + "/v1/messages", content=chunked(), headers=json_headers, timeout=30)
    _anthropic_error(response, 413, "request_too_large")
    openai_headers = {"authorization": "Bearer sk-test", "content-type": "application/json"}
    _openai_error(_post(gateway.openai_url + "/chat/completions", b"{oops", openai_headers), 400, "invalid_json")
    _openai_error(_post(gateway.openai_url + "/responses", big.encode(), openai_headers), 413, "request_too_large")
    assert not upstream.requests  # none of these reached the upstream


def test_unknown_fields_pass_through_for_the_upstream_to_judge(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(upstream)
    body = {"model": MODEL, "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}], "future_knob": {"a": 1}}
    raw = json.dumps(body, indent=3).encode()  # odd formatting: the original bytes must arrive as they are
    response = _post(gateway.base_url + "/v1/messages?beta=true", raw, {**ANTHROPIC_HEADERS,
                     "content-type": "application/json", "anthropic-beta": "x-2025"})  # fmt: skip
    seen = upstream.requests[-1]
    assert seen.body == body and seen.headers["anthropic-beta"] == "x-2025"
    assert seen.headers["x-api-key"] == "sk-ant-test"
    assert int(seen.headers["content-length"]) == len(raw)
    assert response.status_code in (200, 400)  # whatever the upstream decided, relayed
    if response.status_code == 400:
        assert response.json()["type"] == "error"


def test_unreachable_upstream_is_a_502_in_the_api_format(start_gateway: StartGateway) -> None:
    gateway = start_gateway("http://127.0.0.1:9")  # discard port: nothing listens
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as caught:
        client.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 502 and "could not reach the upstream" in caught.value.message
    oa = openai.OpenAI(base_url=gateway.openai_url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught_oa:
        oa.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}])
    assert caught_oa.value.status_code == 502 and caught_oa.value.code == "upstream_unreachable"


def test_stream_cut_halfway_ends_with_the_api_error_event(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    long_text = "word " * 200
    upstream.use([reply(long_text, drop_after_events=6), reply(long_text, drop_after_events=4),
                  reply(long_text, drop_after_events=5)])  # fmt: skip
    gateway = start_gateway(upstream)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    started = time.monotonic()
    with (
        pytest.raises(anthropic.APIError) as caught,
        client.messages.stream(model=MODEL, max_tokens=512, messages=[{"role": "user", "content": "talk"}]) as stream,
    ):
        stream.get_final_message()
    assert "stream" in str(caught.value)
    oa = openai.OpenAI(base_url=gateway.openai_url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIError):
        for _ in oa.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "x"}], stream=True):
            pass
    events = []
    with oa.responses.stream(model="gpt-5", input="talk") as rs:
        for event in rs:
            events.append(event.type)
    assert events[-1] == "error"
    assert time.monotonic() - started < 20


def test_client_disconnect_cancels_the_upstream_request(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use([reply("tick " * 400, event_delay_s=0.05, chunk_chars=5)])
    gateway = start_gateway(upstream)
    body = {"model": MODEL, "max_tokens": 2000, "stream": True, "messages": [{"role": "user", "content": "go"}]}
    with (
        httpx2.Client(timeout=30) as http,
        http.stream("POST", gateway.base_url + "/v1/messages", json=body, headers=ANTHROPIC_HEADERS) as response,
    ):
        for chunk in response.iter_raw():
            if b"content_block_delta" in chunk:
                break
    deadline = time.monotonic() + 10
    while not upstream.requests[-1].client_gone and time.monotonic() < deadline:
        time.sleep(0.05)
    seen = upstream.requests[-1]
    assert seen.client_gone and not seen.finished
    assert upstream.active_streams == 0


def test_rejected_rewrite_is_retried_unmodified_and_the_session_bypassed(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    def step(turn: Turn):  # type: ignore[no-untyped-def]
        rewritten = any(HANDLE.search(e.result or "") for e in turn.exchanges())
        return ApiError(400, "messages.2.content.0: unexpected reference text") if rewritten else reply("fine")

    upstream.use(step)
    gateway = start_gateway(upstream)
    client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
    messages = anthropic_messages(build_log())
    message = client.messages.create(model=MODEL, max_tokens=64, messages=messages, tools=[BASH_ANTHROPIC])
    assert message.content[0].text == "fine"  # type: ignore[union-attr]
    statuses = [r.status for r in upstream.received("anthropic")]
    assert statuses == [400, 200]
    before = len(upstream.requests)
    more: list[MessageParam] = [{"role": "assistant", "content": "fine"}, {"role": "user", "content": "and now?"}]
    client.messages.create(model=MODEL, max_tokens=64, messages=[*messages, *more], tools=[BASH_ANTHROPIC])
    after = upstream.requests[before:]
    assert [r.status for r in after] == [200]  # bypassed: sent unmodified at once, no second refusal
    assert not any(HANDLE.search(json.dumps(r.body)) for r in after)


def test_store_down_fails_open(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    if not have_redis_server():
        pytest.skip("redis-server is not installed: the fail-open test needs a Redis to kill (run .ci/redis.sh start)")
    redis = RedisServer().start()
    try:
        gateway = start_gateway(upstream, store=redis.url)
        closed = start_gateway(upstream, store=redis.url, policy=RewritePolicy(fail_closed=True))
        client = openai.OpenAI(base_url=gateway.openai_url, api_key="k", max_retries=0)
        messages = chat_messages(build_log())
        client.chat.completions.create(model="gpt-5", messages=messages)
        assert upstream.requests[-1].body["messages"][3]["content"].startswith("Stored as out_")
    finally:
        redis.stop()  # Redis killed
    upstream.use([reply("still here")])
    started = time.monotonic()
    changed = cast(ChatCompletionToolMessageParam, {**messages[3], "content": build_log(needle_at=5)})
    completion = client.chat.completions.create(model="gpt-5", messages=[*messages[:3], changed])
    assert completion.choices[0].message.content == "still here"
    assert upstream.requests[-1].body["messages"][3]["content"] == build_log(needle_at=5)  # the original, inline
    assert time.monotonic() - started < 15
    assert httpx2.get(gateway.base_url + "/healthz").json()["fail_open_events"] == 1
    redis = RedisServer(port=redis.port).start()  # back (empty: no persistence): the fail-open turn gets counted
    try:
        for _ in range(3):  # the same session's next turns (the first may still meet a dead pooled connection)
            upstream.use([reply("again")])
            client.chat.completions.create(model="gpt-5", messages=messages)
            events = httpx2.get(gateway.base_url + "/healthz").json()["fail_open_events"]
            counted = httpx2.get(gateway.base_url + "/stats").json()["totals"]["fail_open"]
            if counted == events:
                break
        assert counted == events >= 1  # every fail-open event counted once the store is back, none lost
    finally:
        redis.stop()
    refused = openai.OpenAI(base_url=closed.openai_url, api_key="k", max_retries=0)
    with pytest.raises(openai.APIStatusError) as caught:
        refused.chat.completions.create(model="gpt-5", messages=messages)
    assert caught.value.status_code == 503 and caught.value.code == "store_unavailable"


def test_gateway_token_and_host_check(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    token = "gw-token-" + "z" * 24
    gateway = start_gateway(
        upstream, tokens=(token,), allowed_hosts=("127.0.0.1:*", "localhost:*"), allowed_origins=("http://localhost:*",)
    )
    anon = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-provider", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        anon.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert "x-mcp-offload-token" in caught.value.message
    assert not upstream.requests
    ok = anthropic.Anthropic(base_url=gateway.base_url, api_key="sk-ant-provider", max_retries=0,
                             default_headers={"x-mcp-offload-token": token})  # fmt: skip
    ok.messages.create(model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    seen = upstream.requests[-1].headers
    credential = seen.get("x-api-key") or seen.get("authorization", "").removeprefix("Bearer ")
    assert credential == "sk-ant-provider" and "x-mcp-offload-token" not in seen
    proxy_auth = {"proxy-authorization": f"Bearer {token}", "authorization": "Bearer sk-openai"}
    response = httpx2.get(gateway.openai_url + "/models", headers=proxy_auth, timeout=10)
    assert response.status_code == 200 and upstream.requests[-1].headers["authorization"] == "Bearer sk-openai"
    assert "proxy-authorization" not in upstream.requests[-1].headers
    evil = httpx2.get(gateway.openai_url + "/models", headers={**proxy_auth, "host": "evil.example"}, timeout=10)
    assert evil.status_code == 421 and evil.json()["error"]["code"] == "host_not_allowed"
    origin = httpx2.get(gateway.openai_url + "/models", headers={**proxy_auth, "origin": "http://evil.example"})
    assert origin.status_code == 403
    assert httpx2.get(gateway.base_url + "/healthz").json()["status"] == "ok"  # no token needed


def test_garbage_events_from_the_upstream_end_the_stream_cleanly(start_gateway: StartGateway) -> None:
    """An upstream (a broken local model server, say) that streams events which are not JSON: the spliced stream
    (the gateway reads every event) ends with the API's error event instead of a torn connection. (A stream with
    nothing to splice is relayed byte for byte: the client sees the upstream's bytes as they are.)"""
    import asyncio
    import threading

    import uvicorn

    async def broken(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await receive()
        head = b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message",'
        head += b'"role":"assistant","content":[],"model":"x","usage":{"input_tokens":1,"output_tokens":0}}}\n\n'
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": head + b"event: content_block_start\ndata: {oops\n\n"})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    config = uvicorn.Config(broken, host="127.0.0.1", port=0, log_config=None, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        base = f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
        gateway = start_gateway(base)
        client = anthropic.Anthropic(base_url=gateway.base_url, api_key="k", max_retries=0)
        with (
            pytest.raises(anthropic.APIError) as caught,
            client.messages.stream(
                model=MODEL, max_tokens=8, messages=anthropic_messages(build_log()), tools=[BASH_ANTHROPIC]
            ) as stream,
        ):
            stream.get_final_message()
        assert "not valid JSON" in str(caught.value)
    finally:
        server.should_exit = True
        thread.join(5)
