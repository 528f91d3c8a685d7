"""Golden bytes with the transparent retrieval loop in the conversation: a simulated gateway server (rewrite, then
at random turns the model reads back an offloaded output, the loop's follow-up call, one message to the client,
`record_expansion`) over 30 turns. Every upstream request, the loop's follow-up calls included, extends the one
before it byte for byte: the provider's cache keeps hitting through loops, on all three APIs, across a restart."""

from __future__ import annotations

import copy
import random
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import record_expansion
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.cachesafe.retrieval import run_retrieval
from mcp_offload.core.services import Services, build_services
from support.gateway_core import (
    APIS,
    Conversation,
    headers_for,
    model_turn,
    results_turn,
    settings_for,
    user_text,
    wire,
)

POLICY = RewritePolicy(threshold_tokens=200)
TURNS = 30


def final_answer(api: ApiName, text: str, n: int) -> dict[str, Any]:
    if api == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": text}]}
    if api == "openai_chat":
        return {"role": "assistant", "content": text}
    if api == "gemini":
        return {"role": "model", "parts": [{"text": text}]}
    return {
        "type": "message",
        "role": "assistant",
        "id": f"msg_final_{n}",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def client_copy(api: ApiName, call_output: list[dict[str, Any]], final: dict[str, Any]) -> Any:
    """What the server hands the client for call + final: one response without the retrieval call."""
    if api == "anthropic":
        blocks = [b for b in call_output[0]["content"] if b["type"] != "tool_use"] + final["content"]
        return {"role": "assistant", "content": blocks}
    if api == "openai_chat":
        return dict(final)
    if api == "gemini":  # as Gemini CLI keeps it: adjacent text parts merged into one
        said = "".join(p.get("text", "") for p in call_output[0]["parts"] if "functionCall" not in p)
        return {"role": "model", "parts": [{"text": said + final["parts"][0]["text"]}]}
    return [item for item in call_output if item.get("type") != "function_call"] + [final]


async def simulate(api: ApiName, seed: int, store: Path, loop_every: int) -> list[list[dict[str, Any]]]:
    """The upstream requests' message lists, in order."""
    rng = random.Random(seed)
    conv = Conversation(api, seed=seed, large_every=2)
    key = api_named(api).history.messages_key
    sent: list[list[dict[str, Any]]] = []
    handles: list[str] = []
    services: Services = build_services(settings_for(str(store)))
    try:
        for turn in range(TURNS):
            if turn == TURNS // 2:  # a gateway restart in the middle: new services on the same store
                await services.aclose()
                services = build_services(settings_for(str(store)))
            conv.advance()
            body = conv.body()
            rewrite = await rewrite_request(
                services, api_named(api), copy.deepcopy(body), headers_for(api, "loop"), POLICY
            )
            assert rewrite.fail_open is None
            handles += rewrite.offloaded
            sent.append(rewrite.body[key])
            if handles and rng.randrange(loop_every) == 0:
                handle = rng.choice(handles)
                call_id = f"toolu_r{turn}"
                args = {"handle": handle, "start_line": 1, "end_line": 2}
                call = model_turn(api, [(call_id, "read_large_output", args)], "Let me look.", 1000 + turn)
                answer = await run_retrieval(services, rewrite.session, "read_large_output", args)
                assert not answer.is_error, answer.text
                result = results_turn(api, [(call_id, answer.text)])
                follow_up = [*rewrite.body[key], *call, *result]
                sent.append(follow_up)
                final = final_answer(api, f"Looked at {handle}.", turn)
                copy_for_client = client_copy(api, call, final)
                await record_expansion(
                    services,
                    rewrite.session,
                    api_named(api),
                    copy.deepcopy(copy_for_client),
                    [*call, *result, final],
                    previous_message=body[key][-1],
                )
                conv.messages += copy_for_client if isinstance(copy_for_client, list) else [copy_for_client]
                conv.messages.append(user_text(api, f"Good, continue ({turn})."))
    finally:
        await services.aclose()
    return sent


@pytest.mark.parametrize("api", APIS)
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(seed=st.integers(0, 2**31), loop_every=st.integers(1, 4))
def test_every_upstream_request_extends_the_previous_one_through_loops(
    api: ApiName, seed: int, loop_every: int
) -> None:
    async def main() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            sent = await simulate(api, seed, Path(tmp) / "store", loop_every)
        assert len(sent) > TURNS  # some loops happened
        for n in range(1, len(sent)):
            assert wire(sent[n]).startswith(wire(sent[n - 1])[:-1]), f"upstream request {n} breaks the prefix"

    anyio.run(main)
