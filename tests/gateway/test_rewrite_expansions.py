"""Expansions: after a transparent retrieval loop (or a mixed retrieval + client tool turn) the client's copy of the
model response is restored, on every later turn, to exactly what the upstream saw: the next request's prefix is the
follow-up call's prefix (cache hits), thinking blocks and signatures intact, matching robust to SDK re-serialization.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message as AnthropicMessage
from openai.types.chat import ChatCompletionMessage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseReasoningItem

from mcp_offload.apis.names import ApiName
from mcp_offload.apis.registry import api_named
from mcp_offload.cachesafe.policy import RewritePolicy
from mcp_offload.cachesafe.record import record_expansion
from mcp_offload.cachesafe.request_rewrite import rewrite_request
from mcp_offload.core.services import Services
from support.gateway_core import big_text, client_tools, headers_for, make_body, open_services, validate_body, wire

POLICY = RewritePolicy(threshold_tokens=200)
BIG = big_text(random.Random(1), 900, "log")
SIG = "EqQBCkgIARABGAIiQL" + "x" * 60


@pytest.fixture
async def services(tmp_path: Path) -> Any:
    async with open_services(tmp_path / "store") as services:
        yield services


def sdk_anthropic_copy(content: list[dict[str, Any]]) -> dict[str, Any]:
    """The assistant message as an SDK user sends it back: `Message.model_dump()` content (nulls included), keys in
    another order."""
    message = AnthropicMessage.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    dumped = message.model_dump()
    return {"content": [dict(reversed(list(block.items()))) for block in dumped["content"]], "role": "assistant"}


async def first_turn(services: Services, api: ApiName, credential: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Turn 1: a bash call with a big result, offloaded. Returns the client's messages and the rewritten ones."""
    if api == "anthropic":
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": "Check the log."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "bash", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": BIG}]},
        ]
    elif api == "openai_chat":
        messages = [
            {"role": "user", "content": "Check the log."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": BIG},
        ]
    else:
        messages = [
            {"role": "user", "content": "Check the log."},
            {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": BIG},
        ]
    body = make_body(api, "sys", messages, client_tools(api))
    rewrite = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, credential), POLICY)
    assert rewrite.offloaded and rewrite.tools_injected
    return body, rewrite.body[api_named(api).history.messages_key]


def loop_messages(api: ApiName, handle: str) -> tuple[list[dict[str, Any]], Any]:
    """(what the upstream saw in the loop: call + result + final answer, the client's copy of the response)."""
    args = {"handle": handle, "start_line": 1, "end_line": 3}
    if api == "anthropic":
        upstream: list[dict[str, Any]] = [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "I need the log lines.", "signature": SIG},
                    {"type": "tool_use", "id": "r1", "name": "read_large_output", "input": args},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "[out_… lines 1–3]"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "The log shows three lines."}]},
        ]
        client: Any = sdk_anthropic_copy(
            [
                {"type": "thinking", "thinking": "I need the log lines.", "signature": SIG},
                {"type": "text", "text": "The log shows three lines.", "citations": None},
            ]
        )
        return upstream, client
    if api == "openai_chat":
        upstream = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "r1",
                        "type": "function",
                        "function": {"name": "read_large_output", "arguments": json.dumps(args)},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "r1", "content": "[out_… lines 1–3]"},
            {"role": "assistant", "content": "The log shows three lines."},
        ]
        client = ChatCompletionMessage(role="assistant", content="The log shows three lines.").model_dump()
        return upstream, client
    upstream = [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "ENC1"},
        {"type": "function_call", "call_id": "r1", "name": "read_large_output", "arguments": json.dumps(args)},
        {"type": "function_call_output", "call_id": "r1", "output": "[out_… lines 1–3]"},
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_9",
            "status": "completed",
            "content": [{"type": "output_text", "text": "The log shows three lines.", "annotations": []}],
        },
    ]
    client = [
        ResponseReasoningItem(id="rs_1", type="reasoning", summary=[], encrypted_content="ENC1").model_dump(),
        ResponseOutputMessage.model_validate(
            {
                "id": "msg_9",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [
                    {"type": "output_text", "text": "The log shows three lines.", "annotations": [], "logprobs": []}
                ],
            }
        ).model_dump(),
    ]
    return upstream, client


@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "responses"])
async def test_transparent_loop_is_restored_so_the_next_prefix_is_the_follow_up_prefix(
    services: Services, api: ApiName, tmp_path: Path
) -> None:
    credential = "loop-" + api
    body, rewritten = await first_turn(services, api, credential)
    handle = wire(rewritten).split("Stored as ")[1][:30]
    upstream, client_copy = loop_messages(api, handle)
    follow_up = [*rewritten, *upstream[:-1]]  # what gw-server sent in the loop's follow-up call
    rewrite = await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, credential), POLICY)
    session = rewrite.session
    await record_expansion(services, session, api_named(api), client_copy, upstream)

    key = api_named(api).history.messages_key
    client_next = copy.deepcopy(body[key][1:] if api == "openai_chat" else body[key])
    client_next += client_copy if isinstance(client_copy, list) else [client_copy]
    client_next.append({"role": "user", "content": "Thanks, now fix it."})
    next_body = make_body(api, "sys", client_next, client_tools(api))
    out = await rewrite_request(
        services, api_named(api), copy.deepcopy(next_body), headers_for(api, credential), POLICY
    )
    assert out.expanded == 1 and out.fail_open is None
    validate_body(api, out.body)
    sent = out.body[key]
    assert wire(sent).startswith(wire(follow_up)[:-1])  # the follow-up call's prefix: cache hit
    assert sent[len(follow_up)] == upstream[-1]  # then the upstream's own final answer
    # deterministic: the same request gives the same bytes, also after a restart
    again = await rewrite_request(
        services, api_named(api), copy.deepcopy(next_body), headers_for(api, credential), POLICY
    )
    assert wire(again.body) == wire(out.body)
    async with open_services(Path(services.settings.store)) as restarted:
        after = await rewrite_request(
            restarted, api_named(api), copy.deepcopy(next_body), headers_for(api, credential), POLICY
        )
        assert wire(after.body) == wire(out.body)


def mixed(api: ApiName) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]]]:
    """(upstream: response with a retrieval call + a client call, then the retrieval result; the client's copy
    without the retrieval call; the client's own result)."""
    read = {"handle": "out_" + "a" * 26}
    if api == "anthropic":
        upstream: list[dict[str, Any]] = [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "Both.", "signature": SIG},
                    {"type": "tool_use", "id": "r1", "name": "read_large_output", "input": read},
                    {"type": "tool_use", "id": "c2", "name": "bash", "input": {"cmd": "ls"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "r1", "content": "lines"}]},
        ]
        client: Any = {
            "role": "assistant",
            "content": [
                {"signature": SIG, "thinking": "Both.", "type": "thinking"},
                {"type": "tool_use", "id": "c2", "name": "bash", "input": {"cmd": "ls"}},
            ],
        }
        result = [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c2", "content": "a b c"}]}]
        return upstream, client, result
    if api == "openai_chat":
        call = {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}
        upstream = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "r1",
                        "type": "function",
                        "function": {"name": "read_large_output", "arguments": json.dumps(read)},
                    },
                    call,
                ],
            },
            {"role": "tool", "tool_call_id": "r1", "content": "lines"},
        ]
        client = ChatCompletionMessage.model_validate(
            {"role": "assistant", "content": None, "tool_calls": [call]}
        ).model_dump()
        return upstream, client, [{"role": "tool", "tool_call_id": "c2", "content": "a b c"}]
    fc = {"type": "function_call", "call_id": "c2", "name": "bash", "arguments": '{"cmd": "ls"}'}
    upstream = [
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "ENC2"},
        {"type": "function_call", "call_id": "r1", "name": "read_large_output", "arguments": json.dumps(read)},
        fc,
        {"type": "function_call_output", "call_id": "r1", "output": "lines"},
    ]
    client = [
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "ENC2"},
        ResponseFunctionToolCall.model_validate({**fc, "id": "fc_2", "status": "completed"}).model_dump(),
    ]
    return upstream, client, [{"type": "function_call_output", "call_id": "c2", "output": "a b c"}]


@pytest.mark.parametrize("api", ["anthropic", "openai_chat", "responses"])
async def test_mixed_turn_is_restored_to_what_the_model_produced(services: Services, api: ApiName) -> None:
    credential = "mixed-" + api
    body, rewritten = await first_turn(services, api, credential)
    upstream, client_copy, client_result = mixed(api)
    session = (
        await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, credential), POLICY)
    ).session
    await record_expansion(services, session, api_named(api), client_copy, upstream)
    key = api_named(api).history.messages_key
    client_next = copy.deepcopy(body[key][1:] if api == "openai_chat" else body[key])
    client_next += client_copy if isinstance(client_copy, list) else [client_copy]
    client_next += client_result
    next_body = make_body(api, "sys", client_next, client_tools(api))
    out = await rewrite_request(
        services, api_named(api), copy.deepcopy(next_body), headers_for(api, credential), POLICY
    )
    assert out.expanded == 1
    validate_body(api, out.body)
    sent = out.body[key]
    n = len(rewritten)
    assert wire(sent[:n]) == wire(rewritten)
    if api == "anthropic":
        assert sent[n] == upstream[0]  # all blocks, thinking signature as the model produced it
        assert [b["tool_use_id"] for b in sent[n + 1]["content"]] == ["r1", "c2"]
        assert len(sent) == n + 2
    elif api == "openai_chat":
        assert sent[n:] == [upstream[0], upstream[1], client_result[0]]
    else:
        assert sent[n:] == [*upstream[:3], upstream[3], client_result[0]]


async def test_record_expansion_refuses_results_only(services: Services) -> None:
    from mcp_offload.cachesafe.session import CacheSafeSession

    with pytest.raises(ValueError):
        await record_expansion(
            services,
            CacheSafeSession.of_key("0" * 32),
            api_named("openai_chat"),
            {"role": "assistant", "content": "x"},
            [{"role": "tool", "tool_call_id": "r1", "content": "x"}],
        )


async def test_an_unknown_assistant_message_is_left_alone(services: Services) -> None:
    api: ApiName = "anthropic"
    body, _ = await first_turn(services, api, "nothing-recorded")
    upstream, client_copy = loop_messages(api, "out_" + "b" * 26)
    session = (
        await rewrite_request(
            services, api_named(api), copy.deepcopy(body), headers_for(api, "nothing-recorded"), POLICY
        )
    ).session
    await record_expansion(services, session, api_named(api), client_copy, upstream)
    other = {"role": "assistant", "content": [{"type": "text", "text": "Something else."}]}
    next_body = make_body(api, "sys", [*body["messages"], other, {"role": "user", "content": "ok"}], client_tools(api))
    out = await rewrite_request(services, api_named(api), next_body, headers_for(api, "nothing-recorded"), POLICY)
    assert out.expanded == 0 and out.body["messages"][3] is other


async def test_identical_short_answers_are_restored_each_to_their_own_exchange(services: Services) -> None:
    api: ApiName = "openai_chat"
    credential = "twice"
    body, _ = await first_turn(services, api, credential)
    session = (
        await rewrite_request(services, api_named(api), copy.deepcopy(body), headers_for(api, credential), POLICY)
    ).session
    done = {"role": "assistant", "content": "Done."}

    def loop(call_id: str, answer: str) -> list[dict[str, Any]]:
        call = {"id": call_id, "type": "function", "function": {"name": "read_large_output", "arguments": "{}"}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": answer},
            {"role": "assistant", "content": "Done."},
        ]

    history = body["messages"][1:]
    ask_1 = {"role": "user", "content": "First question?"}
    await record_expansion(
        services, session, api_named(api), done, loop("r1", "first answer"), previous_message=history[-1]
    )
    await record_expansion(services, session, api_named(api), done, loop("r2", "second answer"), previous_message=ask_1)
    client = [*history, done, ask_1, done, {"role": "user", "content": "ok"}]
    out = await rewrite_request(
        services, api_named(api), make_body(api, "sys", client, client_tools(api)), headers_for(api, credential), POLICY
    )
    assert out.expanded == 2
    validate_body(api, out.body)
    answers = [m["content"] for m in out.body["messages"] if m.get("role") == "tool" and m["tool_call_id"][0] == "r"]
    assert answers == ["first answer", "second answer"]
