"""Gemini turns beyond the plain loop, through the real gateway with the real `google-genai` SDK: a mixed turn (the
model calls the gateway's retrieval tool and the client's own tool in one answer; the client gets only its call,
and its next turn is restored so the upstream sees every call answered: the scripted upstream refuses a function
call turn whose responses do not match it), the loop limit (the last call sets functionCallingConfig NONE), and
what is never touched or kept: systemInstruction, the last user turn, the API key."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from google import genai
from google.genai import types

from llm_upstream import UpstreamServer, tool_call
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from support.gateway_core import open_services
from support.gateway_server import StartGateway
from support.llm_conversations import (
    BASH_GEMINI,
    NEEDLE,
    always_search,
    build_log,
    gemini_contents,
    search_then_answer,
)

FLASH = "gemini-2.5-flash"


def _client(base_url: str) -> genai.Client:
    return genai.Client(api_key="turns-key", http_options=types.HttpOptions(base_url=base_url, api_version="v1beta"))


def _config() -> types.GenerateContentConfig:
    return types.GenerateContentConfig(tools=[types.Tool.model_validate(BASH_GEMINI)])


def test_a_mixed_turn_streams_only_the_clients_call_and_the_next_turn_answers_both(
    upstream: UpstreamServer, start_gateway: StartGateway
) -> None:
    script = search_then_answer(extra=tool_call("Bash", {"command": "df -h"}))
    upstream.use([script, script])
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url)
    contents: list[Any] = gemini_contents(build_log(), call_id="c1")
    chunks = list(client.models.generate_content_stream(model=FLASH, contents=contents, config=_config()))
    calls = [c for chunk in chunks for c in chunk.function_calls or []]
    assert [c.name for c in calls] == ["Bash"] and calls[0].args == {"command": "df -h"}
    assert chunks[-1].candidates and chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
    parts = [p for chunk in chunks if chunk.candidates and chunk.candidates[0].content
             for p in chunk.candidates[0].content.parts or []]  # fmt: skip
    contents.append(types.Content(role="model", parts=parts))
    answer = types.FunctionResponse(name="Bash", response={"output": "/dev/sda1 90% used"})
    contents.append(types.Content(role="user", parts=[types.Part(function_response=answer)]))
    final = client.models.generate_content(model=FLASH, contents=contents, config=_config())
    assert final.text is not None and final.text.endswith(f"Found it: {NEEDLE}")
    sent = upstream.received("gemini")
    assert [r.status for r in sent] == [200, 200]  # the restored turn answered every call
    restored = sent[1].body["contents"]
    model_calls = [p["functionCall"]["name"] for p in restored[3]["parts"] if "functionCall" in p]
    answered = [p["functionResponse"]["name"] for p in restored[4]["parts"]]
    assert model_calls == ["search_large_output", "Bash"] and answered == ["search_large_output", "Bash"]
    assert NEEDLE in restored[4]["parts"][0]["functionResponse"]["response"]["output"]


def test_the_loop_limit_ends_with_function_calling_off(upstream: UpstreamServer, start_gateway: StartGateway) -> None:
    upstream.use(always_search())
    gateway = start_gateway(upstream)
    client = _client(gateway.base_url)
    response = client.models.generate_content(model=FLASH, contents=gemini_contents(build_log()), config=_config())
    assert response.text == "giving up on searching" and not response.function_calls
    sent = upstream.received("gemini", ok_only=True)
    assert len(sent) == 6  # the first call, 4 loops, the last call
    assert sent[-1].body["toolConfig"] == {"functionCallingConfig": {"mode": "NONE"}}
    assert sent[-1].body["tools"] == sent[0].body["tools"]  # the tools stay, byte for byte


async def test_system_instruction_last_user_turn_and_key_are_never_touched(tmp_path: Path) -> None:
    secret = "AIzaSy-SECRET-" + "7" * 24
    long_text = "\n".join(f"requirement {i}: keep every line of this text exactly" for i in range(600))
    body: dict[str, Any] = {
        "systemInstruction": {"parts": [{"text": long_text}]},
        "contents": gemini_contents(build_log(), call_id="c1"),
    }
    body["contents"][0] = {"role": "user", "parts": [{"text": long_text}]}  # the last user turn: a long paste
    policy = RewritePolicy(threshold_tokens=200, offload_user_pastes_tokens=200)
    async with open_services(tmp_path / "store") as services:
        before = copy.deepcopy(body)
        rewrite = await rewrite_request(services, api_named("gemini"), body, {"x-goog-api-key": secret}, policy)
    assert body == before and rewrite.offloaded
    out = rewrite.body
    assert out["systemInstruction"] == before["systemInstruction"]
    assert out["contents"][:2] == before["contents"][:2]  # the last user turn (and the model's call)
    assert out["contents"][2]["parts"][0]["functionResponse"]["response"]["output"].startswith("Stored as out_")
    for path in (tmp_path / "store").rglob("*"):
        if path.is_file():
            assert secret.encode() not in path.read_bytes(), path
