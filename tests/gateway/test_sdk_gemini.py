"""The real `google-genai` SDK (sync, async, streaming; `http_options.base_url` pointing at the gateway, the SDK's
default api version `v1`) through the gateway to the scripted Gemini upstream: a large `functionResponse` is
offloaded, the model searches it through the gateway's retrieval tool, and the client gets one ordinary
`GenerateContentResponse` (spliced when streamed). countTokens and the model list pass through untouched."""

from __future__ import annotations

from typing import Any

from google import genai
from google.genai import types

from llm_upstream import UpstreamServer
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_GEMINI, NEEDLE, build_log, gemini_contents, search_then_answer

MODEL = "gemini-2.5-flash"


def _client(base_url: str, **http: Any) -> genai.Client:
    return genai.Client(api_key="gemini-test-key", http_options=types.HttpOptions(base_url=base_url, **http))


def _config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(tools=[types.Tool.model_validate(BASH_GEMINI)])


def _check_loop(upstream: UpstreamServer, log: str) -> None:
    sent = upstream.received("gemini", ok_only=True)
    assert len(sent) == 2
    first, follow = sent[0].body, sent[1].body
    output = first["contents"][2]["parts"][0]["functionResponse"]
    assert output["name"] == "Bash" and set(output) == {"name", "response"}
    assert output["response"]["output"].startswith("Stored as out_") and len(output["response"]["output"]) < len(log)
    names = [d["name"] for t in first["tools"] for d in t.get("functionDeclarations", [])]
    assert names == ["Bash", "read_large_output", "search_large_output", "query_large_output", "list_outputs"]
    assert follow["tools"] == first["tools"] and follow["contents"][:3] == first["contents"]
    call = follow["contents"][3]["parts"][-1]
    assert call["functionCall"]["name"] == "search_large_output" and "thoughtSignature" in call
    answer = follow["contents"][4]["parts"][0]["functionResponse"]
    assert answer["name"] == "search_large_output" and NEEDLE in answer["response"]["output"]


def test_sync_json(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    client = _client(gateway.base_url)  # kept: a collected Client closes its HTTP client
    response = client.models.generate_content(model=MODEL, contents=gemini_contents(log), config=_config())
    assert response.text is not None and response.text.endswith(f"Found it: {NEEDLE}")
    assert not response.function_calls
    assert response.candidates and response.candidates[0].finish_reason == types.FinishReason.STOP
    calls = upstream.received("gemini", ok_only=True)
    assert calls[0].path == f"/v1/models/{MODEL}:generateContent"
    assert response.usage_metadata is not None
    assert response.usage_metadata.candidates_token_count == sum(r.output_tokens for r in calls)
    _check_loop(upstream, log)


def test_sync_stream_splice(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    log = build_log()
    client = _client(gateway.base_url)
    chunks = list(client.models.generate_content_stream(model=MODEL, contents=gemini_contents(log), config=_config()))
    text = "".join(c.text or "" for c in chunks)
    assert text.endswith(f"Found it: {NEEDLE}") and text.startswith("Searching (1)... ")
    assert not [c for c in chunks if c.function_calls]
    assert len({c.response_id for c in chunks}) == 1  # one response, as the client sees it
    finished = [c for c in chunks if c.candidates and c.candidates[0].finish_reason]
    assert len(finished) == 1 and finished[0] is chunks[-1]
    calls = upstream.received("gemini", ok_only=True)
    last = chunks[-1].usage_metadata
    assert last is not None and last.candidates_token_count == sum(r.output_tokens for r in calls)
    assert last.prompt_token_count == sum(r.usage.prompt_tokens for r in calls if r.usage)
    assert calls[0].path == f"/v1/models/{MODEL}:streamGenerateContent"
    _check_loop(upstream, log)


async def test_async_stream_and_json(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(search_then_answer())
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url, api_version="v1beta")
    stream = await client.aio.models.generate_content_stream(
        model=MODEL, contents=gemini_contents(build_log(), call_id="call-1"), config=_config()
    )
    text = "".join([c.text or "" async for c in stream])
    assert text.endswith(f"Found it: {NEEDLE}")
    sent = upstream.received("gemini", ok_only=True)
    assert sent[0].path == f"/v1beta/models/{MODEL}:streamGenerateContent"
    answer = sent[0].body["contents"][2]["parts"][0]["functionResponse"]
    assert answer["id"] == "call-1" and answer["name"] == "Bash"  # the part keeps its id
    upstream.use(search_then_answer())
    response = await client.aio.models.generate_content(
        model=MODEL, contents=gemini_contents(build_log(needle_at=7)), config=_config()
    )
    assert response.text is not None and response.text.endswith(f"Found it: {NEEDLE}")


def test_count_tokens_and_models_pass_through(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url)
    counted = client.models.count_tokens(model=MODEL, contents="hello there")
    assert counted.total_tokens is not None and counted.total_tokens > 0
    names = [m.name for m in client.models.list()]
    assert f"models/{MODEL}" in names
    seen = {r.path: r.headers for r in upstream.requests}
    assert f"/v1/models/{MODEL}:countTokens" in seen and "/v1/models" in seen
    assert seen["/v1/models"]["x-goog-api-key"] == "gemini-test-key"  # the key went upstream untouched
