"""The request side of each API: result parts found in every shape (string / block / part-list results, custom tool
outputs), model-output units, and normalized matching that survives SDK re-serialization (hypothesis over key order
and null fields, plus the real SDK response objects dumped the ways clients dump them)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseReasoningItem

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.record import unit_digest


def views(api: ApiName, messages: list[dict[str, Any]]) -> list[Any]:
    history = api_named(api).history
    return [history.view(m, i) for i, m in enumerate(messages)]


def test_anthropic_result_parts_in_every_shape() -> None:
    api: ApiName = "anthropic"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "a", "name": "bash", "input": {}},
                {"type": "tool_use", "id": "b", "name": "read", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "plain"},
                {
                    "type": "tool_result",
                    "tool_use_id": "b",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "one"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGk="}},
                        {"type": "text", "text": "two"},
                    ],
                },
            ],
        },
    ]
    parts = api_named(api).history.result_parts(messages, views(api, messages))
    assert [(p.result.call_id, p.part.index, p.text, p.tool) for p in parts] == [
        ("a", 0, "plain", "bash"),
        ("b", 0, "one", "read"),
        ("b", 2, "two", "read"),
    ]


def test_responses_custom_tool_outputs_are_results_and_units_are_runs() -> None:
    api: ApiName = "responses"
    items: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"type": "reasoning", "id": "rs", "summary": []},
        {"type": "custom_tool_call", "call_id": "p1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "p1", "output": "Done!"},
        {"type": "function_call", "call_id": "f1", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "f1", "output": [{"type": "input_text", "text": "ok"}]},
    ]
    history = api_named(api).history
    parts = history.result_parts(items, views(api, items))
    assert [(p.result.call_id, p.tool, p.text) for p in parts] == [
        ("p1", "apply_patch", "Done!"),
        ("f1", "shell", "ok"),
    ]
    assert history.output_units(items) == [(1, 3), (4, 5)]
    replaced = history.replace_parts(items[3], parts[0].result, {0: "R"})
    assert replaced == {**items[3], "output": "R"} and items[3]["output"] == "Done!"


def test_chat_units_and_results() -> None:
    api: ApiName = "openai_chat"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "t", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "t", "content": [{"type": "text", "text": "x"}]},
    ]
    history = api_named(api).history
    assert history.output_units(messages) == [(2, 3)]
    assert [p.text for p in history.result_parts(messages, views(api, messages))] == ["x"]


# -- normalized matching ----------------------------------------------------------------------------------------
def shuffled(value: Any, rng: random.Random, nulls: bool) -> Any:
    """The same JSON with keys in another order and (optionally) null fields added, as SDKs re-serialize."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        out = {k: shuffled(v, rng, nulls) for k, v in items}
        if nulls:
            out["citations" if rng.random() < 0.5 else "cache_control"] = None
        return out
    if isinstance(value, list):
        return [shuffled(v, rng, nulls) for v in value]
    return value


SAMPLES: dict[str, list[dict[str, Any]]] = {
    "anthropic": [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "t", "signature": "s"},
                {"type": "text", "text": "hello"},
                {"type": "tool_use", "id": "x", "name": "bash", "input": {"cmd": "ls", "n": [1, 2]}},
            ],
        }
    ],
    "openai_chat": [
        {
            "role": "assistant",
            "content": "hi",
            "tool_calls": [{"id": "x", "type": "function", "function": {"name": "bash", "arguments": '{"a": 1}'}}],
        }
    ],
    "responses": [
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "s"}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"},
    ],
}


@pytest.mark.parametrize("api", list(SAMPLES))
@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), nulls=st.booleans())
def test_key_order_and_null_fields_do_not_change_the_digest(api: ApiName, seed: int, nulls: bool) -> None:
    sample = SAMPLES[api]
    variant = shuffled(sample, random.Random(seed), nulls)
    assert unit_digest(api_named(api), variant) == unit_digest(api_named(api), sample)


@pytest.mark.parametrize("api", list(SAMPLES))
def test_content_changes_do_change_the_digest(api: ApiName) -> None:
    sample = SAMPLES[api]
    changed = json.loads(json.dumps(sample).replace("bash", "bosh"))
    assert unit_digest(api_named(api), changed) != unit_digest(api_named(api), sample)
    assert unit_digest(api_named(api), sample[:-1]) != unit_digest(api_named(api), sample) if len(sample) > 1 else True


def test_sdk_dumps_match_what_the_gateway_recorded() -> None:
    # Anthropic: the response object dumped with and without nulls; a string content equals one text block
    content = [
        {"type": "text", "text": "hello", "citations": None},
        {"type": "tool_use", "id": "x", "name": "bash", "input": {"cmd": "ls"}},
    ]
    message = AnthropicMessage.model_validate(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "c",
            "content": content,
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    recorded = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "tool_use", "id": "x", "name": "bash", "input": {"cmd": "ls"}},
            ],
        }
    ]
    for dumped in (message.model_dump(), message.model_dump(exclude_none=True), message.model_dump(mode="json")):
        client = [{"role": dumped["role"], "content": dumped["content"]}]
        assert unit_digest(api_named("anthropic"), client) == unit_digest(api_named("anthropic"), recorded)
    text_only = [{"role": "assistant", "content": "hello"}]
    assert unit_digest(api_named("anthropic"), text_only) == unit_digest(
        api_named("anthropic"), [{"role": "assistant", "content": [{"type": "text", "text": "hello", "citations": []}]}]
    )

    # Chat: ChatCompletionMessage dumped (refusal/audio/annotations nulls) vs a hand-written dict
    chat = ChatCompletionMessage.model_validate({"role": "assistant", "content": "hi", "annotations": []})
    assert unit_digest(api_named("openai_chat"), [chat.model_dump()]) == unit_digest(
        api_named("openai_chat"), [{"role": "assistant", "content": "hi"}]
    )
    assert unit_digest(api_named("openai_chat"), [chat.model_dump(exclude_none=True)]) == unit_digest(
        api_named("openai_chat"), [{"role": "assistant", "content": [{"type": "text", "text": "hi"}]}]
    )

    # Responses: output items dumped (ids, statuses, logprobs) vs items without them
    items = [
        ResponseReasoningItem(id="rs_1", type="reasoning", summary=[]).model_dump(),
        ResponseOutputMessage.model_validate(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "hi", "annotations": [], "logprobs": []}],
            }
        ).model_dump(),
        ResponseFunctionToolCall.model_validate(
            {
                "type": "function_call",
                "call_id": "c",
                "name": "bash",
                "arguments": "{}",
                "id": "fc_1",
                "status": "completed",
            }
        ).model_dump(),
    ]
    bare: list[dict[str, Any]] = [
        {"type": "reasoning", "summary": []},
        {"role": "assistant", "content": "hi"},
        {"type": "function_call", "call_id": "c", "name": "bash", "arguments": "{}"},
    ]
    assert unit_digest(api_named("responses"), items) == unit_digest(api_named("responses"), bare)
