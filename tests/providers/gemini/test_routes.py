"""Gemini's routes through the real gateway: told apart from OpenAI's `/v1/…` by the `:method` suffix and the key,
the key (`x-goog-api-key` or `?key=`) passed upstream untouched and scoping the session, a body the gateway cannot
read relayed byte for byte, and every failure in Gemini's own error format; `--gemini-upstream` and its env var."""

from __future__ import annotations

import argparse

import httpx2
import pytest

from llm_upstream import ApiError, UpstreamServer
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.session import derive_session
from mcp_offload.cli.gateway import add_parser, options_from_args
from mcp_offload.providers.gemini.routes import credential_headers, generate_call, is_gemini, model_call
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_GEMINI, NEEDLE, build_log, gemini_contents, search_then_answer

MODEL = "gemini-2.5-flash"
BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@pytest.mark.parametrize(
    ("method", "path", "headers", "query", "generate", "gemini"),
    [
        ("POST", "/v1beta/models/gemini-2.5-flash:streamGenerateContent", {}, "alt=sse", True, True),
        ("POST", "/v1/models/gemini-2.5-flash:generateContent", {"x-goog-api-key": "k"}, "", True, True),
        ("POST", "/v1/models/gemini-2.5-flash:countTokens", {}, "", False, True),
        ("GET", "/v1beta/models", {}, "", False, True),
        ("GET", "/v1/models", {}, "key=k", False, True),
        ("GET", "/v1/models", {"authorization": "Bearer sk"}, "", False, False),
        ("GET", "/v1/models/gpt-5", {}, "", False, False),
        ("POST", "/v1/chat/completions", {}, "", False, False),
        ("POST", "/v1/responses", {"authorization": "Bearer sk"}, "", False, False),
    ],
)
def test_gemini_requests_are_told_apart_from_openai(
    method: str, path: str, headers: dict[str, str], query: str, generate: bool, gemini: bool
) -> None:
    assert (generate_call(method, path) is not None) is generate
    assert is_gemini(path, headers, query) is gemini


def test_the_path_names_the_model_and_the_method() -> None:
    call = model_call("/v1beta/models/gemini-3-pro-preview:streamGenerateContent")
    assert call is not None and (call.version, call.model, call.stream) == ("v1beta", "gemini-3-pro-preview", True)
    assert model_call("/v1beta/models/x/y:generateContent") is None


def test_a_query_key_scopes_the_session_like_the_header() -> None:
    by_query = derive_session(api_named("gemini"), BODY, credential_headers({}, "alt=sse&key=secret-1"))
    by_header = derive_session(api_named("gemini"), BODY, {"x-goog-api-key": "secret-1"})
    other = derive_session(api_named("gemini"), BODY, credential_headers({}, "key=secret-2"))
    assert by_query == by_header and by_query.key != other.key


def test_the_gemini_upstream_flag_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse(*argv: str) -> argparse.Namespace:
        parser = argparse.ArgumentParser()
        add_parser(parser.add_subparsers(dest="command"))
        return parser.parse_args(["gateway", *argv])

    assert options_from_args(parse()).upstream.bases["gemini"] == "https://generativelanguage.googleapis.com"
    flagged = options_from_args(parse("--gemini-upstream", "http://127.0.0.1:9/g"))
    assert flagged.upstream.bases["gemini"] == "http://127.0.0.1:9/g"
    monkeypatch.setenv("MCP_OFFLOAD_GEMINI_UPSTREAM", "http://10.0.0.1:8080")
    assert options_from_args(parse()).upstream.bases["gemini"] == "http://10.0.0.1:8080"


def test_the_key_in_the_query_goes_upstream_untouched(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gateway = start_gateway(upstream)
    url = f"{gateway.base_url}/v1beta/models/{MODEL}:generateContent?key=query-key-1"
    answer = httpx2.post(url, json=BODY)
    assert answer.status_code == 200, answer.text
    assert answer.json()["candidates"][0]["content"]["parts"][0]["text"]
    (sent,) = upstream.received("gemini")
    assert "x-goog-api-key" not in sent.headers  # the session saw the key; the upstream request is the client's


def test_a_body_the_gateway_cannot_read_is_relayed_byte_for_byte(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(upstream)
    raw = b'{"contents": [ not json'
    answer = httpx2.post(
        f"{gateway.base_url}/v1beta/models/{MODEL}:generateContent",
        content=raw,
        headers={"x-goog-api-key": "k", "content-type": "application/json"},
    )
    assert answer.status_code == 400
    assert answer.json()["error"]["message"].startswith("Invalid JSON payload received")  # the upstream's words
    assert len(upstream.received("gemini")) == 1


def test_errors_come_back_in_gemini_format(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.push(ApiError(429, "Resource has been exhausted (e.g. check quota)."))
    gateway = start_gateway(upstream)
    url = f"{gateway.base_url}/v1beta/models/{MODEL}:generateContent"
    refused = httpx2.post(url, json=BODY, headers={"x-goog-api-key": "k"})
    assert refused.status_code == 429
    assert refused.json()["error"] == {
        "code": 429,
        "message": "Resource has been exhausted (e.g. check quota).",
        "status": "RESOURCE_EXHAUSTED",
    }
    down = start_gateway("http://127.0.0.1:1")
    unreachable = httpx2.post(f"{down.base_url}/v1beta/models/{MODEL}:generateContent", json=BODY,
                              headers={"x-goog-api-key": "k"})  # fmt: skip
    assert unreachable.status_code == 502
    error = unreachable.json()["error"]
    assert error["code"] == 502 and error["status"] == "UNAVAILABLE" and "--gemini-upstream" in error["message"]


def test_a_json_array_stream_that_loops_is_answered_as_one_whole_answer(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    body = {"contents": gemini_contents(build_log()), "tools": [BASH_GEMINI]}
    answer = httpx2.post(f"{gateway.base_url}/v1beta/models/{MODEL}:streamGenerateContent", json=body,
                         headers={"x-goog-api-key": "k"}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    (whole,) = answer.json()  # still the JSON-array form the client asked for
    texts = "".join(p.get("text", "") for p in whole["candidates"][0]["content"]["parts"])
    assert texts.endswith(f"Found it: {NEEDLE}")
    assert [r.path for r in upstream.received("gemini")] == [f"/v1beta/models/{MODEL}:generateContent"] * 2


def test_a_request_on_an_explicit_cache_is_forwarded_untouched(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(upstream)
    log = build_log()
    body = {"contents": gemini_contents(log), "cachedContent": "cachedContents/abc123"}
    answer = httpx2.post(f"{gateway.base_url}/v1beta/models/{MODEL}:generateContent", json=body,
                         headers={"x-goog-api-key": "k"}, timeout=30)  # fmt: skip
    assert answer.status_code == 200, answer.text
    (sent,) = upstream.received("gemini")
    assert sent.body == body  # Gemini refuses tools next to cachedContent: nothing offloaded, nothing added
