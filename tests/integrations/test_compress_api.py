"""mcp-offload's compression service (Headroom's contract) on the gateway, called over HTTP as LiteLLM, Portkey and
Kong call it: message count and marker, sticky bytes, retrieval (whole, search, jq), tenants, restarts, instances,
and every bad input answered with a clear JSON error."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from google.genai import types

from llm_upstream import UpstreamServer
from mcp_offload.gateway.compress_api import caller_for, marker
from support import HANG_TIMEOUT_S, free_port
from support.gateway_server import StartGateway
from support.llm_conversations import NEEDLE, build_log
from support.store import RedisServer, have_redis_server

HASH = re.compile(r"Retrieve more: hash=([a-f0-9]{24})\]$")
A = {"Authorization": "Bearer tenant-a"}
B = {"Authorization": "Bearer tenant-b"}
TOKEN = "compress-key-4f1e9a7c2b8d"
ORDERS = json.dumps({"orders": [{"id": f"ord-{i}", "total": i * 3, "state": "open" if i % 9 else "held"}
                                for i in range(900)]})  # fmt: skip


def conversation(log: str = "") -> list[dict[str, Any]]:
    """What LiteLLM's guardrail sends: OpenAI-format rows, assistant rows and the newest exchange held back."""
    return [
        {"role": "user", "content": "Build the project and tell me what failed."},
        {"role": "tool", "tool_call_id": "call_01", "content": log or build_log()},
        {"role": "tool", "tool_call_id": "call_02", "content": "12 passed"},
        {"role": "tool", "tool_call_id": "call_03", "content": ORDERS},
    ]


def compress(base: str, messages: list[dict[str, Any]], headers: dict[str, str] = A, **extra: Any) -> httpx2.Response:
    return httpx2.post(base + "/v1/compress", json={"messages": messages, "model": "gpt-5", **extra}, headers=headers)


def hashes_of(body: dict[str, Any]) -> list[str]:
    return [h for m in body["messages"] if isinstance(m["content"], str) for h in HASH.findall(m["content"])]


def test_compress_keeps_the_count_stubs_with_the_marker_and_is_sticky(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gw = start_gateway(upstream)
    messages = conversation()
    first = compress(gw.base_url, messages)
    assert first.status_code == 200
    body = first.json()
    assert len(body["messages"]) == len(messages)
    assert body["messages"][0] == messages[0] and body["messages"][2] == messages[2]  # small and user rows untouched
    stub = body["messages"][1]["content"]
    assert stub.startswith("Stored as out_") and "text;" in stub and "[01100]" not in stub  # reference + preview
    assert body["messages"][1]["tool_call_id"] == "call_01"
    assert body["ccr_hashes"] == hashes_of(body) and len(body["ccr_hashes"]) == 2
    assert stub.endswith(marker(body["ccr_hashes"][0]))
    assert body["tokens_before"] > 10 * body["tokens_after"] > 0
    assert body["tokens_saved"] == body["tokens_before"] - body["tokens_after"]
    assert body["transforms_applied"] == ["mcp-offload:reference"]
    again = compress(gw.base_url, messages)
    assert again.content == first.content  # the same bytes every call: the provider's cache keeps hitting
    longer = compress(gw.base_url, [*messages, {"role": "tool", "tool_call_id": "call_04", "content": "ok"}]).json()
    assert longer["messages"][:4] == body["messages"]  # a new turn leaves the compressed prefix as it was


def test_retrieve_whole_search_jq_and_post_forms(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gw = start_gateway(upstream)
    log_hash, orders_hash = compress(gw.base_url, conversation()).json()["ccr_hashes"]
    whole = httpx2.get(f"{gw.base_url}/v1/retrieve/{log_hash}", headers=A)
    assert whole.status_code == 200 and whole.json()["original_content"] == build_log()  # nothing lost
    assert whole.json()["mode"] == "original"
    found = httpx2.get(f"{gw.base_url}/v1/retrieve/{log_hash}", params={"query": "disk quota"}, headers=A).json()
    assert found["mode"] == "search" and NEEDLE in found["original_content"] and "1101" in found["original_content"]
    assert len(found["original_content"]) < 2_000
    program = 'jq:[.orders[] | select(.state == "held") | .id] | length'
    jq = httpx2.post(f"{gw.base_url}/v1/retrieve/{orders_hash}", json={"query": program}, headers=A).json()
    assert jq["mode"] == "jq" and jq["original_content"].strip() == "100" and jq["is_error"] is False
    bad = httpx2.post(f"{gw.base_url}/v1/retrieve", json={"hash": orders_hash, "query": "jq:.orders[ |"}, headers=A)
    assert bad.status_code == 200 and bad.json()["is_error"] is True and "Traceback" not in bad.text
    regex = httpx2.post(f"{gw.base_url}/v1/retrieve", json={"hash": log_hash, "query": "re:build-77\\d\\d"}, headers=A)
    assert NEEDLE in regex.json()["original_content"]


def test_hashes_are_tenant_scoped_and_expired_ones_say_so(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gw = start_gateway(upstream)
    (log_hash, orders_hash) = compress(gw.base_url, conversation()).json()["ccr_hashes"]
    other = httpx2.get(f"{gw.base_url}/v1/retrieve/{log_hash}", headers=B)
    unknown = httpx2.get(f"{gw.base_url}/v1/retrieve/{'0' * 24}", headers=A)
    assert other.status_code == unknown.status_code == 404
    assert other.json()["error"]["code"] == unknown.json()["error"]["code"] == "not_found"
    assert other.text.replace(log_hash, "H") == unknown.text.replace("0" * 24, "H")  # nothing tells them apart
    assert compress(gw.base_url, conversation(), headers=B).json()["ccr_hashes"][0] != log_hash  # per tenant
    stub = compress(gw.base_url, conversation()).json()["messages"][1]["content"]
    handle = re.match(r"Stored as (out_[a-z2-7]{26})", stub).group(1)  # type: ignore[union-attr]
    assert gw.app is not None
    gw.run(gw.app.services.store.delete(caller_for(A).session.key, handle))  # gone, as after the store's TTL
    expired = httpx2.get(f"{gw.base_url}/v1/retrieve/{log_hash}", headers=A)
    assert expired.status_code == 404 and expired.json()["error"]["code"] == "expired"
    assert "call_01" in expired.json()["error"]["message"]  # names the tool call to run again
    assert httpx2.get(f"{gw.base_url}/v1/retrieve/{orders_hash}", headers=A).status_code == 200


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({"messages": "hello"}, "invalid_messages"),
        ({"messages": []}, "invalid_messages"),
        ({"messages": [{"role": "user", "content": "x"}, 7]}, "invalid_messages"),
        ({"messages": [{"content": "no role"}]}, "invalid_messages"),
        ({"messages": [{"role": "user", "content": "x"}], "format": "vertex"}, "unknown_format"),
        ([1, 2], "invalid_json"),
    ],
)
def test_bad_compress_requests_are_clear_400s(
    upstream: UpstreamServer, start_gateway: StartGateway, payload: Any, code: str
) -> None:
    gw = start_gateway(upstream)
    answer = httpx2.post(gw.base_url + "/v1/compress", json=payload, headers=A)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == code
    assert "Traceback" not in answer.text
    for path in ("/v1/retrieve/xyz", "/v1/retrieve/" + "a" * 40):
        assert httpx2.get(gw.base_url + path, headers=A).json()["error"]["code"] == "invalid_hash"
    assert httpx2.post(gw.base_url + "/v1/compress", content=b"{not json", headers=A).status_code == 400


def test_bypass_header_and_anthropic_format(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gw = start_gateway(upstream)
    messages = conversation()
    bypassed = compress(gw.base_url, messages, headers={**A, "x-headroom-bypass": "true"}).json()
    assert bypassed["messages"] == messages and bypassed["ccr_hashes"] == [] and bypassed["bypassed"] is True
    anthropic: list[dict[str, Any]] = [
        {"role": "user", "content": "Build it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": build_log()}]},
    ]
    body = compress(gw.base_url, anthropic, format="anthropic").json()
    assert len(body["messages"]) == 3 and len(body["ccr_hashes"]) == 1
    assert body["messages"][2]["content"][0]["content"].startswith("Stored as out_")
    # a result the model has already answered is the cached prefix: left as it is (the gateway's cost rule decides)
    answered_result = {**anthropic[2]["content"][0], "tool_use_id": "toolu_2", "content": build_log(needle_at=3)}
    answered: list[dict[str, Any]] = [
        *anthropic[:2],
        {**anthropic[2], "content": [answered_result]},
        {"role": "assistant", "content": "Looking."},
    ]
    assert compress(gw.base_url, answered, format="anthropic").json()["ccr_hashes"] == []


def gemini_contents(log: str) -> list[dict[str, Any]]:
    """The exchange as the google-genai SDK sends it: its own `types.Content` objects in their wire form."""
    call = types.FunctionCall(id="c_1", name="bash", args={})
    answer = types.FunctionResponse(id="c_1", name="bash", response={"output": log})
    contents = [
        types.Content(role="user", parts=[types.Part(text="Build it.")]),
        types.Content(role="model", parts=[types.Part(function_call=call)]),
        types.Content(role="user", parts=[types.Part(function_response=answer)]),
    ]
    return [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in contents]


def three_formats(log: str) -> dict[str, list[dict[str, Any]]]:
    """One exchange with a large tool result in each format the service reads (four), none naming its format."""
    return {
        "gemini": gemini_contents(log),
        "anthropic": [
            {"role": "user", "content": "Build it."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": log}]},
        ],
        "openai_chat": [
            {"role": "system", "content": "You build projects."},
            {"role": "user", "content": [{"type": "text", "text": "Build it."}]},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": log},
        ],
        "responses": [
            {"role": "user", "content": [{"type": "input_text", "text": "Build it."}]},
            {"type": "function_call", "call_id": "fc_1", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "fc_1", "output": log},
        ],
    }  # fmt: skip


@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "responses", "gemini"])
def test_the_format_is_detected_when_none_is_named(
    upstream: UpstreamServer, start_gateway: StartGateway, api: str
) -> None:
    gw = start_gateway(upstream)
    messages = three_formats(build_log())[api]
    detected = compress(gw.base_url, messages, headers={**A, "x-session-id": api})
    assert detected.status_code == 200
    body = detected.json()
    assert body["format"] == api and len(body["ccr_hashes"]) == 1
    assert body["tokens_before"] > 10 * body["tokens_after"] > 0  # the 100 KB result became a stub
    assert "Stored as out_" in json.dumps(body["messages"][-1]) and build_log() not in json.dumps(body["messages"])
    named = compress(gw.base_url, messages, headers={**A, "x-session-id": api}, format=api)
    assert named.json()["messages"] == body["messages"]  # detected or named: the same stub bytes
    if api == "gemini":  # still the google-genai SDK's own contents, the answer now a reference
        answer = types.Content.model_validate(body["messages"][-1]).parts[0].function_response  # type: ignore[index]
        assert answer is not None and answer.response["output"].startswith("Stored as out_")  # type: ignore[index]
    plain = compress(gw.base_url, [{"role": "user", "content": "hello"}]).json()  # every format reads it alike
    assert plain["messages"] == [{"role": "user", "content": "hello"}] and plain["ccr_hashes"] == []


@pytest.mark.parametrize(
    ("messages", "format_", "code", "says"),
    [
        ([{"role": "model", "parts": "hi"}], None, "unrecognized_messages", "messages[0] (role 'model')"),
        ([{"role": "user", "content": 7}], None, "unrecognized_messages", "not a message of any known format"),
        (  # an Anthropic tool result in an OpenAI Chat list: two formats mixed
            [*three_formats("x" * 9_000)["openai_chat"], three_formats("y")["anthropic"][2]],
            None, "unrecognized_messages", "mix formats",
        ),
        (three_formats("x" * 9_000)["anthropic"], "openai", "format_mismatch", "messages[1]"),
        (three_formats("x" * 9_000)["responses"], "anthropic", "format_mismatch", "OpenAI Responses"),
        (three_formats("x" * 9_000)["gemini"], "openai", "format_mismatch", "(it reads as Gemini API)"),
        (three_formats("x" * 9_000)["anthropic"], "bedrock", "unknown_format", "use one of"),
    ],
)  # fmt: skip
def test_a_list_of_no_single_format_or_the_wrong_one_is_a_400_and_stores_nothing(
    upstream: UpstreamServer,
    start_gateway: StartGateway,
    messages: list[dict[str, Any]],
    format_: str | None,
    code: str,
    says: str,
) -> None:
    gw = start_gateway(upstream)
    extra: dict[str, Any] = {} if format_ is None else {"format": format_}
    answer = compress(gw.base_url, messages, A, **extra)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == code and says in error["message"] and "\n" not in error["message"]
    assert gw.app is not None
    assert gw.run(gw.app.services.store.list(caller_for(A).session.key)) == []  # nothing stored


def test_affinity_sessions_restart_and_token(
    upstream: UpstreamServer, start_gateway: StartGateway, tmp_path: Path
) -> None:
    store = str(tmp_path / "shared-store")
    gw = start_gateway(upstream, store=store, tokens=("tenant-a",))
    assert compress(gw.base_url, conversation(), headers=B).status_code == 401  # not the gateway's token
    first = compress(gw.base_url, conversation(), headers={**A, "x-headroom-session-id": "conv-1"}).json()
    gw.stop()
    again = start_gateway(upstream, store=store, tokens=("tenant-a",))  # a restart on the same store
    assert compress(again.base_url, conversation(), headers={**A, "x-headroom-session-id": "conv-1"}).json() == first
    got = httpx2.get(f"{again.base_url}/v1/retrieve/{first['ccr_hashes'][0]}", headers=A)
    assert got.status_code == 200 and got.json()["original_content"] == build_log()
    assert httpx2.get(again.base_url + "/health").json()["status"] == "ok"  # no token needed
    assert httpx2.get(again.base_url + "/readyz", headers=A).json()["status"] == "ready"


def test_two_instances_share_handles_and_a_dead_store_is_a_503(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    if not have_redis_server():
        pytest.skip("redis-server is not installed: instances share handles through Redis (.ci/redis.sh start)")
    redis = RedisServer().start()
    try:
        a = start_gateway(upstream, store=redis.url)
        b = start_gateway(upstream, store=redis.url)
        on_a = compress(a.base_url, conversation()).json()
        assert compress(b.base_url, conversation()).json() == on_a  # the same decision and bytes on either
        got = httpx2.get(f"{b.base_url}/v1/retrieve/{on_a['ccr_hashes'][0]}", headers=A)
        assert got.json()["original_content"] == build_log()
    finally:
        redis.stop()
    down = compress(a.base_url, conversation(log=build_log(needle_at=7)))
    assert down.status_code == 503 and down.json()["error"]["code"] == "store_unavailable"
    assert "Traceback" not in down.text
    assert httpx2.get(f"{a.base_url}/v1/retrieve/{on_a['ccr_hashes'][0]}", headers=A).status_code == 503
    assert httpx2.get(a.base_url + "/readyz").status_code == 503
    assert httpx2.get(a.base_url + "/health").status_code == 200


def test_served_by_the_mcp_offload_gateway_command(tmp_path: Path) -> None:
    """`mcp-offload gateway` (the console entry, a real subprocess) serves the contract beside the LLM APIs."""
    port = free_port()
    args = [sys.executable, "-m", "mcp_offload", "gateway", "--port", str(port), "--store", str(tmp_path / "store"),
            "--threshold-tokens", "500", "--token", TOKEN]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + HANG_TIMEOUT_S
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the gateway did not start"
            with contextlib.suppress(httpx2.HTTPError):
                if httpx2.get(base + "/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.1)
        key = {"Authorization": f"Bearer {TOKEN}"}
        assert compress(base, conversation()).status_code == 401  # not the gateway's token
        body = compress(base, conversation(), headers=key).json()
        assert len(body["ccr_hashes"]) == 2
        got = httpx2.get(f"{base}/v1/retrieve/{body['ccr_hashes'][0]}", params={"query": "quota"}, headers=key)
        assert NEEDLE in got.json()["original_content"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=HANG_TIMEOUT_S)
    assert proc.returncode == 0, err.decode()
    assert TOKEN not in err.decode() and "Traceback" not in err.decode()
