"""Gemini through the real gateway, the guarantees the other APIs have: the transparent loop inside a stream with
the time to first token unchanged, a `thoughtSignature` round trip on a Gemini 3 model (whose upstream refuses a
function call turn without its signature and any altered one) across the loop and the next turns, a broken stream
ending in Gemini's error event, and the cost at Gemini's cached-input price against going direct."""

from __future__ import annotations

import base64
import time
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import errors, types

from llm_upstream import UpstreamServer, reply, tool_call
from llm_upstream.validate_gemini import call_signature_text
from support.gateway_server import StartGateway
from support.llm_conversations import BASH_GEMINI, NEEDLE, build_log, gemini_contents, search_then_answer

FIRST_TOKEN_S = 0.8
FLASH = "gemini-2.5-flash"


def _client(base_url: str, key: str = "gemini-test-key") -> genai.Client:
    return genai.Client(api_key=key, http_options=types.HttpOptions(base_url=base_url, api_version="v1beta"))


def _config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(tools=[types.Tool.model_validate(BASH_GEMINI)])


def _first_text_s(http: httpx2.Client, base: str, body: dict[str, Any]) -> float:
    """Seconds to the first text chunk (the stream is read to its end)."""
    started = time.perf_counter()
    first: float | None = None
    url = f"{base}/v1beta/models/{FLASH}:streamGenerateContent?alt=sse"
    with http.stream("POST", url, json=body, headers={"x-goog-api-key": "ttft-key"}) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            if first is None and b'"text"' in chunk:
                first = time.perf_counter() - started
    assert first is not None, "no text chunk"
    return first


def test_time_to_first_token_is_the_upstreams_also_when_the_stream_loops(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    gateway = start_gateway(upstream)
    offloading = {"contents": gemini_contents(build_log()), "tools": [BASH_GEMINI]}
    slow = reply("a long answer " * 20, first_token_delay_s=FIRST_TOKEN_S, event_delay_s=0.01)
    looping = search_then_answer()

    def slow_search(turn: Any) -> Any:
        step = looping(turn)
        return reply(*step.content, first_token_delay_s=FIRST_TOKEN_S, event_delay_s=0.01)

    with httpx2.Client(timeout=30) as http:
        upstream.use([reply("ok")])  # the offload decision is recorded first: what follows is a later turn's cost
        warm = http.post(f"{gateway.base_url}/v1beta/models/{FLASH}:generateContent", json=offloading,
                         headers={"x-goog-api-key": "ttft-key"})  # fmt: skip
        assert warm.status_code == 200, warm.text
        upstream.use([slow, slow])
        direct = _first_text_s(http, upstream.base_url, offloading)
        through = _first_text_s(http, gateway.base_url, offloading)  # offloads, injects the tools: the splice path
        assert direct >= FIRST_TOKEN_S and through - direct < 0.15, (direct, through)
        upstream.use(slow_search)
        looped = _first_text_s(http, gateway.base_url, offloading)  # the model searches, then answers
        print(f"TTFT direct {direct * 1e3:.0f} ms, through {through * 1e3:.0f} ms, looping {looped * 1e3:.0f} ms")
        assert looped - direct < 0.15, (direct, looped)
    sent = upstream.received("gemini", ok_only=True)
    assert sent[-1].body["contents"][-2]["parts"][-1]["functionCall"]["name"] == "search_large_output"


def test_a_thought_signature_round_trip_on_gemini_3(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    script = search_then_answer()
    upstream.use([reply(tool_call("Bash", {"command": "make"})), script, script, reply("bye")])
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url)
    chat = client.chats.create(model="gemini-3-pro-preview", config=_config())
    first = chat.send_message("Build the project and tell me what failed.")
    (call,) = first.function_calls or []
    content = first.candidates[0].content if first.candidates else None
    part = content.parts[0] if content is not None and content.parts else None
    assert part is not None and part.thought_signature and call.id
    signature = part.thought_signature
    answer = types.Part(
        function_response=types.FunctionResponse(id=call.id, name="Bash", response={"output": build_log()})
    )
    text = "".join(chunk.text or "" for chunk in chat.send_message_stream(answer))
    assert text.endswith(f"Found it: {NEEDLE}")
    assert chat.send_message("thanks").text == "bye"
    sent = upstream.requests
    assert [r.status for r in sent] == [200, 200, 200, 200]  # no signature was refused, nothing was retried
    signer = upstream.state.signer
    later = sent[3].body["contents"]
    calls = [p for c in later for p in c["parts"] if "functionCall" in p]
    assert [c["functionCall"]["name"] for c in calls] == ["Bash", "search_large_output"]
    assert base64.urlsafe_b64decode(calls[0]["thoughtSignature"]) == signature  # the client's call, as it got it
    restored = calls[1]["thoughtSignature"]
    assert signer.verify(call_signature_text(calls[1]["functionCall"]), restored)  # the model's, byte for byte
    assert sent[2].body["contents"][1]["parts"][0] == calls[0]  # the client's bytes went up untouched
    assert sent[2].body["contents"][3]["parts"][-1] == calls[1]  # the loop sent it back as the model made it
    assert later[: len(sent[2].body["contents"])] == sent[2].body["contents"]  # the next turn extends the follow-up


def test_a_broken_stream_ends_with_geminis_error_event(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    looping = search_then_answer()
    upstream.use([looping, reply("never finished " * 40, drop_after_events=2)])
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url)
    seen: list[str] = []
    with pytest.raises(errors.APIError) as raised:
        for chunk in client.models.generate_content_stream(
            model=FLASH, contents=gemini_contents(build_log()), config=_config()
        ):
            seen.append(chunk.text or "")
    assert raised.value.code == 500 and "upstream_stream_cut" in str(raised.value.message)
    assert "".join(seen).startswith("Searching (1)... ")  # what arrived before the cut was delivered


def _session_cost(upstream: UpstreamServer, key: str) -> float:
    """Input cost in base-input-token units at Gemini 2.5's prices (cached input at 0.10x) of one credential."""
    usage = [r.usage for r in upstream.received("gemini", ok_only=True) if r.headers.get("x-goog-api-key") == key]
    return sum((u.prompt_tokens - u.cache_read) + 0.10 * u.cache_read for u in usage if u is not None)


def test_a_tool_heavy_session_costs_a_fraction_of_going_direct(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    turns = 8
    upstream.use(lambda turn: reply(tool_call("Bash", {"command": f"make step{turn.tool_turns}"})))
    gateway = start_gateway(upstream)
    for base, key in ((upstream.base_url, "direct-key"), (gateway.base_url, "gateway-key")):
        client = _client(base, key)
        contents: list[Any] = [{"role": "user", "parts": [{"text": "Build every step and report."}]}]
        for n in range(turns):
            response = client.models.generate_content(model=FLASH, contents=contents, config=_config())
            assert response.candidates and response.candidates[0].content
            contents.append(response.candidates[0].content)
            (call,) = response.function_calls or []
            log = build_log(lines=1200, needle_at=n * 100)
            contents.append(
                {"role": "user", "parts": [{"functionResponse": {"name": call.name, "response": {"output": log}}}]}
            )
    direct, through = _session_cost(upstream, "direct-key"), _session_cost(upstream, "gateway-key")
    print(f"Gemini {turns}-turn session: input cost through the gateway {through / direct:.1%} of going direct")
    assert through < 0.35 * direct, (through, direct)
    stats = httpx2.get(gateway.base_url + "/stats").json()
    (session,) = [s for s in stats["sessions"] if s["counters"].get("requests") == turns]
    assert session["cost_ratio"] is not None and session["cost_ratio"] < 0.5
