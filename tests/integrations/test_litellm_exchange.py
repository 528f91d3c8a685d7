"""The LiteLLM guardrail's pure parts, without LiteLLM: the loop's round messages and final answer in the three APIs'
shapes (read from dicts and from the SDKs' pydantic models, as LiteLLM hands over either), the per-call table, and
the round trip through the decision record: what the guardrail records is what the next turn's rewrite restores."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.types.chat import ChatCompletion
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import record_expansion
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.core.services import Services
from mcp_offload.integrations.litellm.calls import CallTable, LoopCall
from mcp_offload.integrations.litellm.exchange import final_answer, response_api, response_text, round_messages

SEARCH = {"id": "call_s", "name": "search_large_output", "arguments": '{"handle": "out_x", "pattern": "FATAL"}'}
FOUND = "1 match(es) for 'FATAL'"


def _chat_response(content: str | None, calls: list[dict[str, Any]] | None = None) -> ChatCompletion:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls
        ]
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": "gpt-5",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        }
    )


class FakeStreamReplay:
    """The shape of LiteLLM's FakeAnthropicMessagesStreamIterator: a whole answer held as `.response`."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response


def test_round_messages_in_the_three_shapes() -> None:
    assert round_messages(api_named("openai_chat"), "Searching", [(SEARCH, FOUND)]) == [
        {
            "role": "assistant",
            "content": "Searching",
            "tool_calls": [
                {
                    "id": "call_s",
                    "type": "function",
                    "function": {"name": SEARCH["name"], "arguments": SEARCH["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_s", "content": FOUND},
    ]
    assert round_messages(api_named("anthropic"), "", [(SEARCH, FOUND)]) == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_s", "name": SEARCH["name"], "input": json.loads(SEARCH["arguments"])}
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_s", "content": FOUND}]},
    ]
    assert round_messages(api_named("responses"), "Searching", [(SEARCH, FOUND)]) == [
        {"role": "assistant", "content": "Searching"},
        {"type": "function_call", "call_id": "call_s", "name": SEARCH["name"], "arguments": SEARCH["arguments"]},
        {"type": "function_call_output", "call_id": "call_s", "output": FOUND},
    ]


def test_final_answer_of_a_chat_response_model() -> None:
    response = _chat_response("Found it", [{"id": "call_b", "name": "Bash", "arguments": "{}"}])
    assert response_api(response).name == "openai_chat" and response_text(response) == "Found it"
    final = final_answer(api_named("openai_chat"), response)
    assert final is not None
    said = {
        "role": "assistant",
        "content": "Found it",
        "tool_calls": [{"id": "call_b", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}],
    }
    assert final.client_copy == said and final.messages == [said]
    assert (
        final_answer(api_named("openai_chat"), _chat_response(None, [SEARCH])) is None
    )  # still retrieving: not recorded


def test_final_answer_of_an_anthropic_answer_and_of_its_stream_replay() -> None:
    answer = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": "Found it"}]}
    assert response_api(answer).name == "anthropic" and response_text(answer) == "Found it"
    for response in (answer, FakeStreamReplay(answer)):
        final = final_answer(api_named("anthropic"), response)
        assert final is not None and final.messages == [{"role": "assistant", "content": answer["content"]}]
    assert final_answer(api_named("anthropic"), {"content": []}) is None
    assert final_answer(api_named("anthropic"), object()) is None  # a real stream: nothing whole to record
    calling = {"content": [{"type": "tool_use", "id": "t", "name": "read_large_output", "input": {}}]}
    assert final_answer(api_named("anthropic"), calling) is None


def test_final_answer_of_a_responses_answer_made_of_sdk_models() -> None:
    text = ResponseOutputText(type="output_text", text="Found it", annotations=[])
    message = ResponseOutputMessage(id="msg_1", type="message", role="assistant", status="completed", content=[text])
    response = {"output": [message]}
    assert response_api(response).name == "responses" and response_text(response) == "Found it"
    final = final_answer(api_named("responses"), response)
    assert final is not None and final.client_copy == [message.model_dump(exclude_none=True)]
    call = ResponseFunctionToolCall(type="function_call", call_id="c", name="query_large_output", arguments="{}")
    assert final_answer(api_named("responses"), {"output": [message, call]}) is None


def test_rounds_by_depth_a_retry_replaces_and_a_gap_marks_the_call_incomplete() -> None:
    call = LoopCall("session", api_named("openai_chat"), None)
    call.add_round(0, api_named("openai_chat"), [{"n": 0}])
    call.add_round(1, api_named("openai_chat"), [{"n": 1}])
    call.add_round(1, api_named("openai_chat"), [{"n": 2}])  # depth 1 again (a retried follow-up)
    assert (
        call.loop_messages() == [{"n": 0}, {"n": 2}] and call.complete and call.rounds_api is api_named("openai_chat")
    )
    call.add_round(3, api_named("openai_chat"), [{"n": 3}])
    assert not call.complete
    mixed = LoopCall("session", api_named("anthropic"), None)
    mixed.add_round(0, api_named("anthropic"), [])
    mixed.add_round(1, api_named("openai_chat"), [])
    assert mixed.rounds_api is None  # rounds in two APIs: not the client's shape


def test_the_call_table_is_bounded_by_count_and_age() -> None:
    table = CallTable(ttl_s=10.0, max_calls=2)
    for i in range(3):
        table.remember(f"c{i}", LoopCall("s", api_named("openai_chat"), None, at=float(i)))
    assert table.get("c0") is None and table.get("c1") is not None and table.get("c2") is not None
    table.remember("late", LoopCall("s", api_named("openai_chat"), None, at=11.5))
    assert table.get("c1") is None and table.get("late") is not None  # c1 is 10.5 s older: expired
    table.forget("late")
    assert table.get("late") is None and table.get(None) is None


CONVERSATIONS: dict[ApiName, list[dict[str, Any]]] = {
    "openai_chat": [
        {"role": "user", "content": "Build it."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "short log"},
    ],
    "anthropic": [
        {"role": "user", "content": "Build it."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "short log"}]},
    ],
    "responses": [
        {"role": "user", "content": "Build it."},
        {"type": "function_call", "call_id": "call_1", "name": "Bash", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "short log"},
    ],
}  # fmt: skip
FINALS: dict[ApiName, Any] = {
    "openai_chat": _chat_response("Found it"),
    "anthropic": FakeStreamReplay({"content": [{"type": "text", "text": "Found it", "citations": None}]}),
    "responses": {
        "output": [
            ResponseOutputMessage(
                id="msg_9",
                type="message",
                role="assistant",
                status="completed",
                content=[ResponseOutputText(type="output_text", text="Found it", annotations=[])],
            )
        ]
    },
}
CLIENT_COPIES: dict[ApiName, list[dict[str, Any]]] = {  # what a client sends back, as its SDK serializes it
    "openai_chat": [{"role": "assistant", "content": "Found it"}],
    "anthropic": [{"role": "assistant", "content": [{"type": "text", "text": "Found it"}]}],
    "responses": [
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Found it"}], "id": "x"}
    ],
}


@pytest.mark.parametrize("api", list(CONVERSATIONS))
async def test_what_the_guardrail_records_the_next_rewrite_restores(api: ApiName, services: Services) -> None:
    """The guardrail's recording step (rounds + final answer, keyed by the client's copy and its last message) and
    the next turn's `rewrite_request`, over the store: the client's copy is replaced by the exact loop messages."""
    key = "input" if api == "responses" else "messages"
    first: dict[str, Any] = {"model": "m", key: CONVERSATIONS[api]}
    rewrite = await rewrite_request(services, api_named(api), first, {"authorization": "Bearer k"}, RewritePolicy())
    added = round_messages(api_named(api), "Searching", [(SEARCH, FOUND)])
    final = final_answer(api_named(api), FINALS[api])
    assert final is not None
    await record_expansion(
        services,
        rewrite.session,
        api_named(api),
        final.client_copy,
        [*added, *final.messages],
        previous_message=CONVERSATIONS[api][-1],
    )
    nxt = {"model": "m", key: [*CONVERSATIONS[api], *CLIENT_COPIES[api], {"role": "user", "content": "Thanks"}]}
    restored = await rewrite_request(services, api_named(api), nxt, {"authorization": "Bearer k"}, RewritePolicy())
    assert restored.expanded == 1
    assert restored.body[key] == [*CONVERSATIONS[api], *added, *final.messages, {"role": "user", "content": "Thanks"}]
