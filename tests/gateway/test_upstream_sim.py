"""The scripted LLM upstream itself: it refuses what the real APIs refuse, its cache numbers are exact on
constructed cases, and the real SDKs parse what it streams."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import anthropic
import httpx2
import openai
import pytest
from anthropic.types import MessageParam, TextBlock, ThinkingBlock, ThinkingConfigParam, ToolParam, ToolUseBlock
from openai.types.chat import ChatCompletion, ChatCompletionFunctionToolParam, ChatCompletionMessageParam
from openai.types.responses import FunctionToolParam, ResponseFunctionToolCall, ResponseInputParam

from llm_upstream import ApiError, PromptCache, Thinking, UpstreamServer, reply, tool_call
from llm_upstream.prompt import TokenCache, render_anthropic, render_chat

MODEL = "claude-sonnet-4-6"
BlockT = TypeVar("BlockT")
TOOLS: list[ToolParam] = [
    {
        "name": "Bash",
        "description": "run",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
    }
]
CHAT_TOOLS: list[ChatCompletionFunctionToolParam] = [
    {
        "type": "function",
        "function": {"name": "shell", "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}},
    }
]
# the SDK's TypedDict requires `strict`; these tools leave it out, as clients may (the wire body stays as sent)
RESP_TOOLS = cast(
    list[FunctionToolParam],
    [
        {
            "type": "function",
            "name": "shell",
            "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}},
        }
    ],
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def upstream(clock: Clock) -> Any:
    with UpstreamServer(cache=PromptCache(clock=clock), seed=0) as server:
        yield server


def post(upstream: UpstreamServer, path: str, body: dict[str, Any], **headers: str) -> httpx2.Response:
    base = (
        {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        if path.startswith("/v1/messages")
        else {"authorization": "Bearer k"}
    )
    return httpx2.post(upstream.base_url + path, json=body, headers={**base, **headers}, timeout=30)


def block_at(content: Sequence[object], index: int, kind: type[BlockT]) -> BlockT:
    """`content[index]` as the block type the test expects there (a response's content/output is a union)."""
    found = content[index]
    assert isinstance(found, kind), f"item {index} is a {type(found).__name__}, not a {kind.__name__}"
    return found


def cached_chat_tokens(completion: ChatCompletion) -> int | None:
    """The cached prompt tokens a chat completion reports (its usage and details are optional in the SDK)."""
    assert completion.usage is not None and completion.usage.prompt_tokens_details is not None
    return completion.usage.prompt_tokens_details.cached_tokens


def use(id_: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": name, "input": {"command": "ls"}}


def result(id_: str, text: str = "out") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": text}


def user(*content: Any) -> MessageParam:
    """A user message: one string as is, else the blocks (any JSON: the validation cases send invalid ones too)."""
    return {
        "role": "user",
        "content": list(content) if len(content) != 1 or not isinstance(content[0], str) else content[0],
    }


def assistant(*content: Any) -> MessageParam:
    return {"role": "assistant", "content": list(content)}


TEXT = {"type": "text", "text": "go"}

# -- validation: each case is refused with 400 in the API's own format, with the real API's wording ------------
ANTHROPIC_BAD = [
    ("first message assistant", {"messages": [assistant(TEXT)]}, 'first message must use the "user" role'),
    ("roles do not alternate", {"messages": [user("a"), user("b")]}, "roles must alternate"),
    (
        "tool_use unanswered",
        {"messages": [user("a"), assistant(use("t1")), user("b")]},
        "`tool_use` ids were found without `tool_result`",
    ),
    (
        "tool_use last",
        {"messages": [user("a"), assistant(use("t1"))]},
        "`tool_use` ids were found without `tool_result`",
    ),
    ("orphan tool_result", {"messages": [user("a"), assistant(TEXT), user(result("t9"))]}, "unexpected `tool_use_id`"),
    (
        "result id mismatch",
        {"messages": [user("a"), assistant(use("t1")), user(result("t2"))]},
        "unexpected `tool_use_id`",
    ),
    ("result not first", {"messages": [user("a"), assistant(use("t1")), user(TEXT, result("t1"))]}, "must come first"),
    (
        "result answers an older turn",
        {"messages": [user("a"), assistant(use("t1")), user(result("t1")), assistant(TEXT), user(result("t1"))]},
        "unexpected `tool_use_id`",
    ),
    (
        "duplicate tool_use id",
        {"messages": [user("a"), assistant(use("t1"), use("t1")), user(result("t1"))]},
        "ids must be unique",
    ),
    ("unknown block type", {"messages": [user({"type": "banana", "text": "x"})]}, "Input tag 'banana'"),
    ("tool_use in a user turn", {"messages": [user(use("t1"))]}, "Input tag 'tool_use'"),
    ("empty text block", {"messages": [user({"type": "text", "text": ""})]}, "text content blocks must be non-empty"),
    ("empty content", {"messages": [{"role": "user", "content": []}, assistant(TEXT)]}, "non-empty content"),
    (
        "tool blocks without tools",
        {"messages": [user("a"), assistant(use("t1")), user(result("t1"))], "tools": None},
        "must define tools",
    ),
    ("duplicate tool names", {"tools": TOOLS * 2}, "Tool names must be unique"),
    ("bad tool name", {"tools": [{**TOOLS[0], "name": "has space"}]}, "String should match pattern"),
    ("tool_choice names no tool", {"tool_choice": {"type": "tool", "name": "Nope"}}, "is not defined"),
    ("max_tokens missing", {"max_tokens": None}, "max_tokens: Field required"),
    ("unknown field", {"bogus": 1}, "bogus: Extra inputs are not permitted"),
    (
        "forged thinking",
        {
            "messages": [
                user("a"),
                assistant({"type": "thinking", "thinking": "x", "signature": "c2ln"}, use("t1")),
                user(result("t1")),
            ]
        },
        "Invalid `signature`",
    ),
    (
        "forged redacted thinking",
        {"messages": [user("a"), assistant({"type": "redacted_thinking", "data": "AAAA"}, TEXT), user("b")]},
        "Invalid `data`",
    ),
    (
        "five breakpoints",
        {
            "messages": [
                user(*[{"type": "text", "text": f"t{i}", "cache_control": {"type": "ephemeral"}} for i in range(5)])
            ]
        },
        "A maximum of 4 blocks with cache_control",
    ),
    (
        "thinking budget over max_tokens",
        {"thinking": {"type": "enabled", "budget_tokens": 4096}},
        "must be greater than `thinking.budget_tokens`",
    ),
    (
        "thinking with forced tool",
        {"thinking": {"type": "enabled", "budget_tokens": 1024}, "max_tokens": 2000, "tool_choice": {"type": "any"}},
        "forces tool use",
    ),
]


def anthropic_body(**override: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 1000, "messages": [user("hello")], "tools": TOOLS}
    for key, value in override.items():
        if value is None:
            body.pop(key, None)
        else:
            body[key] = value
    return body


@pytest.mark.parametrize(("case", "override", "wording"), ANTHROPIC_BAD, ids=[c[0] for c in ANTHROPIC_BAD])
def test_anthropic_refuses_what_the_api_refuses(
    upstream: UpstreamServer, case: str, override: dict[str, Any], wording: str
) -> None:
    r = post(upstream, "/v1/messages", anthropic_body(**override))
    assert r.status_code == 400, r.text
    body = r.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert wording in body["error"]["message"], body["error"]["message"]
    assert upstream.requests[-1].status == 400 and upstream.requests[-1].usage is None  # refused: cache untouched


def test_anthropic_accepts_a_well_formed_tool_history(upstream: UpstreamServer) -> None:
    messages = [
        user("a"),
        assistant(TEXT, use("t1"), use("t2")),
        user(result("t2"), result("t1"), TEXT),
        assistant(TEXT),
        user("b"),
    ]
    r = post(upstream, "/v1/messages", anthropic_body(messages=messages))
    assert r.status_code == 200, r.text
    assert r.json()["type"] == "message"


def test_anthropic_system_turns_need_the_per_turn_beta(upstream: UpstreamServer) -> None:
    """Claude Code sends `system` messages between turns with the per-turn-control beta (and retries without)."""
    messages = [
        user("a"),
        {"role": "system", "content": [{"type": "text", "text": "note"}]},
        assistant(TEXT),
        user("b"),
    ]
    r = post(upstream, "/v1/messages", anthropic_body(messages=messages))
    assert r.status_code == 400 and "Input should be 'user' or 'assistant'" in r.json()["error"]["message"]
    beta = {"anthropic-beta": "claude-code-20250219,per-turn-control-2026-07-01"}
    assert post(upstream, "/v1/messages", anthropic_body(messages=messages), **beta).status_code == 200
    between = [user("a"), assistant(use("t1")), messages[1], user(result("t1"))]
    r = post(upstream, "/v1/messages", anthropic_body(messages=between), **beta)
    assert r.status_code == 400 and "without `tool_result` blocks immediately after" in r.json()["error"]["message"]


def test_anthropic_thinking_rules(upstream: UpstreamServer) -> None:
    """Signed thinking comes back unmodified: accepted; with thinking on, the continued turn must start with it."""
    client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    thinking: ThinkingConfigParam = {"type": "enabled", "budget_tokens": 1024}
    upstream.push(reply(tool_call("Bash", {"command": "ls"})))  # the upstream adds a signed thinking block itself
    first = client.messages.create(model=MODEL, max_tokens=2000, messages=[user("a")], tools=TOOLS, thinking=thinking)
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    turn = [b.model_dump(exclude_none=True, exclude={"caller"}) for b in first.content]
    answer = user(result(block_at(first.content, 1, ToolUseBlock).id))
    ok = client.messages.create(
        model=MODEL, max_tokens=2000, messages=[user("a"), assistant(*turn), answer], tools=TOOLS, thinking=thinking
    )
    assert ok.stop_reason == "end_turn"
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        client.messages.create(
            model=MODEL,
            max_tokens=2000,
            messages=[user("a"), assistant(turn[1]), answer],
            tools=TOOLS,
            thinking=thinking,
        )
    tampered = [{**turn[0], "thinking": turn[0]["thinking"] + " "}, turn[1]]
    with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
        client.messages.create(
            model=MODEL,
            max_tokens=2000,
            messages=[user("a"), assistant(*tampered), answer],
            tools=TOOLS,
            thinking=thinking,
        )


def test_anthropic_omitted_thinking_is_sealed(upstream: UpstreamServer) -> None:
    """`thinking.display: "omitted"` (Claude Code sends it): empty thinking text, a signature that seals the hidden
    text; sent back as it came it is accepted, filled in or with another block's signature it is not."""
    client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    thinking: ThinkingConfigParam = {"type": "adaptive", "display": "omitted"}
    upstream.push(reply(Thinking("secret plan"), tool_call("Bash", {"command": "ls"})))
    first = client.messages.create(model=MODEL, max_tokens=2000, messages=[user("a")], tools=TOOLS, thinking=thinking)
    block = first.content[0].model_dump(exclude_none=True)
    assert block["thinking"] == "" and block["signature"]
    answer = user(result(block_at(first.content, 1, ToolUseBlock).id))
    call = first.content[1].model_dump(exclude_none=True, exclude={"caller"})
    ok = post(
        upstream,
        "/v1/messages",
        anthropic_body(messages=[user("a"), assistant(block, call), answer], thinking=thinking),
    )
    assert ok.status_code == 200, ok.text
    filled = {**block, "thinking": "secret plan"}
    r = post(
        upstream,
        "/v1/messages",
        anthropic_body(messages=[user("a"), assistant(filled, call), answer], thinking=thinking),
    )
    assert r.status_code == 400 and "Invalid `signature`" in r.json()["error"]["message"]


CHAT_BAD = [
    (
        "tool without tool_calls",
        [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}],
        "must be a response to a preceeding message with 'tool_calls'",
    ),
    (
        "tool id mismatch",
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c2", "content": "x"},
        ],
        "not found in 'tool_calls'",
    ),
    (
        "unanswered id",
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "user", "content": "b"},
        ],
        "did not have response messages: c2",
    ),
    (
        "tool after a user turn",
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
            {"role": "user", "content": "b"},
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
        ],
        "preceeding message",
    ),
    (
        "assistant null content without calls",
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": None}],
        "expected a string, got null",
    ),
    ("unknown role", [{"role": "robot", "content": "a"}], "Supported values"),
    (
        "arguments not a string",
        [
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "shell", "arguments": {}}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "x"},
        ],
        "expected a string",
    ),
]


@pytest.mark.parametrize(("case", "messages", "wording"), CHAT_BAD, ids=[c[0] for c in CHAT_BAD])
def test_chat_refuses_what_the_api_refuses(
    upstream: UpstreamServer, case: str, messages: list[dict[str, Any]], wording: str
) -> None:
    r = post(upstream, "/v1/chat/completions", {"model": "gpt-5", "messages": messages, "tools": CHAT_TOOLS})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and wording in error["message"], error


def test_chat_refuses_unknown_arguments_and_stray_stream_options(upstream: UpstreamServer) -> None:
    r = post(
        upstream, "/v1/chat/completions", {"model": "gpt-5", "messages": [{"role": "user", "content": "a"}], "bogus": 1}
    )
    assert r.status_code == 400 and r.json()["error"]["param"] == "bogus"
    r = post(
        upstream,
        "/v1/chat/completions",
        {"model": "gpt-5", "messages": [{"role": "user", "content": "a"}], "stream_options": {"include_usage": True}},
    )
    assert r.status_code == 400 and "only allowed when 'stream' is enabled" in r.json()["error"]["message"]


FC = {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"}
RESPONSES_BAD = [
    (
        "output without call",
        [{"role": "user", "content": "a"}, {"type": "function_call_output", "call_id": "c1", "output": "x"}],
        "No tool call found for function call output with call_id c1",
    ),
    (
        "output id mismatch",
        [{"role": "user", "content": "a"}, FC, {"type": "function_call_output", "call_id": "c2", "output": "x"}],
        "call_id c2",
    ),
    (
        "call without output",
        [{"role": "user", "content": "a"}, FC, {"role": "user", "content": "b"}],
        "No tool output found for function call c1",
    ),
    ("unknown item type", [{"type": "banana"}], "Invalid value: 'banana'"),
    (
        "user output_text part",
        [{"role": "user", "content": [{"type": "output_text", "text": "x"}]}],
        "Invalid value: 'output_text'",
    ),
    (
        "forged reasoning",
        [
            {"role": "user", "content": "a"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "Zm9yZ2Vk"},
        ],
        "could not be verified",
    ),
]


@pytest.mark.parametrize(("case", "items", "wording"), RESPONSES_BAD, ids=[c[0] for c in RESPONSES_BAD])
def test_responses_refuses_what_the_api_refuses(
    upstream: UpstreamServer, case: str, items: list[dict[str, Any]], wording: str
) -> None:
    r = post(upstream, "/v1/responses", {"model": "gpt-5", "input": items, "tools": RESP_TOOLS})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error" and wording in error["message"], error


def test_responses_previous_response_id_chains_and_unknown_ids_fail(upstream: UpstreamServer) -> None:
    client = openai.OpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    upstream.push(reply(tool_call("shell", {"cmd": "ls"})), reply("listed"))
    first = client.responses.create(model="gpt-5", input="list files", tools=RESP_TOOLS)
    call = block_at(first.output, 0, ResponseFunctionToolCall)
    second = client.responses.create(
        model="gpt-5",
        previous_response_id=first.id,
        tools=RESP_TOOLS,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "a b"}],
    )
    assert second.output_text == "listed"
    with pytest.raises(openai.BadRequestError, match="not found"):
        client.responses.create(model="gpt-5", previous_response_id="resp_missing", input="x")


def test_missing_credential_is_refused_in_each_format(upstream: UpstreamServer) -> None:
    r = httpx2.post(upstream.base_url + "/v1/messages", json=anthropic_body())
    assert r.status_code == 401 and r.json()["error"]["type"] == "authentication_error"
    r = httpx2.post(upstream.openai_url + "/chat/completions", json={"model": "gpt-5", "messages": []})
    assert r.status_code == 401 and "API key" in r.json()["error"]["message"]
    r = httpx2.post(upstream.base_url + "/v1/messages", content=b"{not json", headers={"x-api-key": "k"})
    assert r.status_code == 400 and r.json()["type"] == "error"


# -- the prompt cache: exact numbers on constructed prompts -------------------------------------------------------
def filler(words: int, tag: str) -> str:
    return " ".join(f"{tag}{i}" for i in range(words))


def tokens_of(api: str, body: dict[str, Any]) -> list[int]:
    """Cumulative token counts at each segment boundary, from the upstream's own renderer."""
    render = render_anthropic if api == "anthropic" else render_chat
    totals = [0]
    for seg in render(body, TokenCache()):
        totals.append(totals[-1] + seg.tokens)
    return totals


def test_anthropic_cache_reads_and_writes_at_breakpoints(upstream: UpstreamServer, clock: Clock) -> None:
    client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    system = [{"type": "text", "text": filler(900, "s"), "cache_control": {"type": "ephemeral"}}]
    history = [
        user(filler(400, "u")),
        assistant({"type": "text", "text": "ok"}),
        user({"type": "text", "text": filler(300, "v"), "cache_control": {"type": "ephemeral"}}),
    ]
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 100, "system": system, "messages": history, "tools": TOOLS}
    t = tokens_of("anthropic", body)  # segments: tool, system, u, ok, v
    assert t[2] >= 1024  # the system breakpoint is cacheable
    first = client.messages.create(**body).usage
    assert (first.cache_read_input_tokens, first.cache_creation_input_tokens, first.input_tokens) == (0, t[5], 0)
    second = client.messages.create(**body).usage
    assert (second.cache_read_input_tokens, second.cache_creation_input_tokens, second.input_tokens) == (t[5], 0, 0)
    # a new turn with the breakpoint moved to its end: reads the old prefix, writes the new part
    longer: dict[str, Any] = {
        **body,
        "messages": [
            *history[:2],
            user(filler(300, "v")),
            assistant({"type": "text", "text": "fine"}),
            user({"type": "text", "text": "next", "cache_control": {"type": "ephemeral"}}),
        ],
    }
    t2 = tokens_of("anthropic", longer)
    third = client.messages.create(**longer).usage
    assert (third.cache_read_input_tokens, third.cache_creation_input_tokens) == (t[5], t2[7] - t[5])
    # after the TTL only the system prefix... is gone too: everything is written again
    clock.now += 301
    fourth = client.messages.create(**longer).usage
    assert (fourth.cache_read_input_tokens, fourth.cache_creation_input_tokens) == (0, t2[7])
    # a change in the prefix (the first user message) misses from there on; the system breakpoint still hits
    changed: dict[str, Any] = {**longer, "messages": [user(filler(400, "w")), *longer["messages"][1:]]}
    fifth = client.messages.create(**changed).usage
    assert fifth.cache_read_input_tokens == t[2]
    stats = upstream.stats(upstream.requests[-1].session or "")
    assert stats.requests == 5 and stats.prefix_breaks == 1


def test_anthropic_no_write_below_the_minimum_and_no_read_beyond_the_lookback(upstream: UpstreamServer) -> None:
    client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    small: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 100,
        "messages": [user({"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}})],
    }
    assert client.messages.create(**small).usage.cache_creation_input_tokens == 0
    assert client.messages.create(**small).usage.cache_read_input_tokens == 0
    # 25 blocks after the cached prefix, breakpoint only on the last one: the 20-block lookback does not reach
    head = [user({"type": "text", "text": filler(1500, "h"), "cache_control": {"type": "ephemeral"}})]
    body: dict[str, Any] = {"model": MODEL, "max_tokens": 100, "messages": head}
    assert client.messages.create(**body).usage.cache_creation_input_tokens > 1024
    blocks = [{"type": "text", "text": f"block {i}"} for i in range(25)]
    far: dict[str, Any] = {
        **body,
        "messages": [
            user(
                {"type": "text", "text": filler(1500, "h")},
                *blocks[:-1],
                {**blocks[-1], "cache_control": {"type": "ephemeral"}},
            )
        ],
    }
    assert client.messages.create(**far).usage.cache_read_input_tokens == 0
    near: dict[str, Any] = {
        **body,
        "messages": [
            user(
                {"type": "text", "text": filler(1500, "h")},
                *blocks[:5],
                {**blocks[5], "cache_control": {"type": "ephemeral"}},
            )
        ],
    }
    assert client.messages.create(**near).usage.cache_read_input_tokens == tokens_of("anthropic", body)[1]


def test_automatic_caching_places_the_breakpoint_on_the_last_block(upstream: UpstreamServer) -> None:
    body = anthropic_body(messages=[user(filler(1500, "a"))], cache_control={"type": "ephemeral"})
    total = tokens_of("anthropic", body)[-1]
    assert post(upstream, "/v1/messages", body).json()["usage"]["cache_creation_input_tokens"] == total
    assert post(upstream, "/v1/messages", body).json()["usage"]["cache_read_input_tokens"] == total


def test_openai_cache_in_128_token_steps_from_1024(upstream: UpstreamServer, clock: Clock) -> None:
    client = openai.OpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    short: list[ChatCompletionMessageParam] = [{"role": "user", "content": filler(300, "a")}]
    client.chat.completions.create(model="gpt-5", messages=short)
    assert cached_chat_tokens(client.chat.completions.create(model="gpt-5", messages=short)) == 0
    messages = [{"role": "system", "content": filler(1000, "s")}, {"role": "user", "content": filler(500, "u")}]
    body: dict[str, Any] = {"model": "gpt-5", "messages": messages}
    t = tokens_of("openai_chat", body)
    assert client.chat.completions.create(**body).usage.prompt_tokens_details.cached_tokens == 0
    again = client.chat.completions.create(**body).usage
    assert again.prompt_tokens == t[-1] and again.prompt_tokens_details.cached_tokens == t[-1] // 128 * 128
    # the next turn extends the prompt: the whole previous prompt is read (in 128-token steps)
    longer: dict[str, Any] = {
        **body,
        "messages": [*messages, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}],
    }
    assert client.chat.completions.create(**longer).usage.prompt_tokens_details.cached_tokens == t[-1] // 128 * 128
    # a change in the user message: only the system message's steps are read
    changed: dict[str, Any] = {**body, "messages": [messages[0], {"role": "user", "content": filler(500, "x")}]}
    assert client.chat.completions.create(**changed).usage.prompt_tokens_details.cached_tokens == t[1] // 128 * 128
    clock.now += 301
    assert client.chat.completions.create(**body).usage.prompt_tokens_details.cached_tokens == 0


def test_responses_usage_reports_cached_tokens(upstream: UpstreamServer) -> None:
    client = openai.OpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    body: dict[str, Any] = {"model": "gpt-5", "instructions": filler(1200, "i"), "input": "hello"}
    first = client.responses.create(**body).usage
    second = client.responses.create(**body).usage
    assert first.input_tokens_details.cached_tokens == 0
    assert (
        second.input_tokens == first.input_tokens
        and second.input_tokens_details.cached_tokens == first.input_tokens // 128 * 128
    )


def test_sessions_are_per_credential_and_model(upstream: UpstreamServer) -> None:
    body = anthropic_body(messages=[user(filler(1500, "a"))], cache_control={"type": "ephemeral"})
    post(upstream, "/v1/messages", body)
    assert (
        post(upstream, "/v1/messages", body, **{"x-api-key": "other"}).json()["usage"]["cache_read_input_tokens"] == 0
    )
    assert (
        post(upstream, "/v1/messages", {**body, "model": "claude-opus-4-6"}).json()["usage"]["cache_read_input_tokens"]
        == 0
    )
    assert post(upstream, "/v1/messages", body).json()["usage"]["cache_read_input_tokens"] > 0
    assert len(upstream.sessions()) == 3


# -- the SDKs parse the streams -----------------------------------------------------------------------------------
def test_anthropic_sdk_accumulates_the_stream(upstream: UpstreamServer) -> None:
    client = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    upstream.push(
        reply(
            Thinking("let me look"),
            "Looking " * 20,
            tool_call("Bash", {"command": "cat f.json", "n": [1, 2]}),
            chunk_chars=5,
        )
    )
    with client.messages.stream(model=MODEL, max_tokens=2000, messages=[user("a")], tools=TOOLS) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop" and "message_delta" in kinds
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    thought = block_at(final.content, 0, ThinkingBlock)
    assert thought.thinking == "let me look" and thought.signature
    assert block_at(final.content, 1, TextBlock).text == "Looking " * 20
    assert block_at(final.content, 2, ToolUseBlock).input == {"command": "cat f.json", "n": [1, 2]}
    assert final.stop_reason == "tool_use" and final.usage.output_tokens > 1
    assert final.usage.input_tokens == upstream.requests[-1].usage.uncached  # type: ignore[union-attr]


async def test_async_sdks_parse_all_three_streams(upstream: UpstreamServer) -> None:
    a = anthropic.AsyncAnthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    o = openai.AsyncOpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    upstream.push(reply("hi there", tool_call("Bash", {"command": "ls"})))
    async with a.messages.stream(model=MODEL, max_tokens=100, messages=[user("a")], tools=TOOLS) as s:
        message = await s.get_final_message()
    assert block_at(message.content, 1, ToolUseBlock).input == {"command": "ls"}
    upstream.push(
        reply("calling", tool_call("shell", {"cmd": "ls"}), tool_call("shell", {"cmd": "pwd"}), chunk_chars=3)
    )
    async with o.chat.completions.stream(
        model="gpt-5",
        messages=[{"role": "user", "content": "a"}],
        tools=CHAT_TOOLS,
        stream_options={"include_usage": True},
    ) as s:
        completion = await s.get_final_completion()
    msg = completion.choices[0].message
    assert msg.content == "calling" and [c.function.arguments for c in msg.tool_calls or []] == [
        '{"cmd": "ls"}',
        '{"cmd": "pwd"}',
    ]
    assert (
        completion.choices[0].finish_reason == "tool_calls" and completion.usage and completion.usage.prompt_tokens > 0
    )
    upstream.push(reply(Thinking("hmm"), "text out", tool_call("shell", {"cmd": "ls"}), chunk_chars=4))
    async with o.responses.stream(
        model="gpt-5", input="a", tools=RESP_TOOLS, include=["reasoning.encrypted_content"]
    ) as s:
        response = await s.get_final_response()
    assert [i.type for i in response.output] == ["reasoning", "message", "function_call"]
    assert response.output_text == "text out" and block_at(response.output, 2, ResponseFunctionToolCall).arguments == (
        '{"cmd": "ls"}'
    )
    assert response.usage and response.usage.input_tokens_details.cached_tokens == 0
    # the reasoning item goes back as it came (encrypted_content verified) with the call's output
    items = cast(
        ResponseInputParam,
        [
            {"role": "user", "content": "a"},
            *[i.model_dump(exclude_none=True) for i in response.output],
            {
                "type": "function_call_output",
                "call_id": block_at(response.output, 2, ResponseFunctionToolCall).call_id,
                "output": "f",
            },
        ],
    )
    assert (await o.responses.create(model="gpt-5", input=items, tools=RESP_TOOLS)).output_text


def test_chat_stream_raw_format_ends_with_done(upstream: UpstreamServer) -> None:
    upstream.push(reply("abc"))
    with httpx2.stream(
        "POST",
        upstream.openai_url + "/chat/completions",
        headers={"authorization": "Bearer k"},
        json={
            "model": "gpt-5",
            "messages": [{"role": "user", "content": "a"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as r:
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert '"choices": []' in lines[-2] and '"cached_tokens"' in lines[-2]


def test_scripted_errors_and_faults(upstream: UpstreamServer) -> None:
    a = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    o = openai.OpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    upstream.push(ApiError(429, "slow down", retry_after_s=7))
    with pytest.raises(anthropic.RateLimitError) as caught:
        a.messages.create(model=MODEL, max_tokens=10, messages=[user("a")])
    assert (
        caught.value.response.headers["retry-after"] == "7"
        and cast(dict[str, Any], caught.value.body)["error"]["type"] == "rate_limit_error"
    )
    upstream.push(ApiError(529, "overloaded"))
    with pytest.raises(anthropic.APIStatusError) as status:
        a.messages.create(model=MODEL, max_tokens=10, messages=[user("a")])
    assert status.value.status_code == 529
    upstream.push(ApiError(500, "boom"))
    with pytest.raises(openai.InternalServerError):
        o.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "a"}])
    upstream.push(reply("x" * 400, chunk_chars=10, drop_after_events=6))
    with (
        pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"),  # the SDK passes it through
        a.messages.stream(model=MODEL, max_tokens=10, messages=[user("a")]) as s,
    ):
        s.get_final_message()
    assert upstream.requests[-1].finished is False
    upstream.push(reply("late", first_token_delay_s=0.4))
    started = time.monotonic()
    with a.messages.stream(model=MODEL, max_tokens=10, messages=[user("a")]) as s:
        next(iter(s))
        waited = time.monotonic() - started
        assert block_at(s.get_final_message().content, 0, TextBlock).text == "late"
    assert waited >= 0.4


def test_count_tokens_and_models(upstream: UpstreamServer) -> None:
    body: dict[str, Any] = {"model": MODEL, "messages": [user(filler(100, "a"))], "tools": TOOLS}
    counted = anthropic.Anthropic(base_url=upstream.base_url, api_key="k").messages.count_tokens(**body)
    assert counted.input_tokens == tokens_of("anthropic", body)[-1]
    assert upstream.requests[-1].usage is None  # counting is not a cached request
    ids = [m.id for m in openai.OpenAI(base_url=upstream.openai_url, api_key="k").models.list()]
    assert "gpt-5" in ids
    assert any(m.id == MODEL for m in anthropic.Anthropic(base_url=upstream.base_url, api_key="k").models.list())


# -- the default agent script --------------------------------------------------------------------------------------
def test_agent_script_follows_directives_across_apis(upstream: UpstreamServer) -> None:
    prompt = "Find the key.\n@run cat big.json\n@search PLANTED\n@answer PLANTED-[0-9a-f]+"
    search_tool: ToolParam = {
        "name": "search_large_output",
        "description": "s",
        "input_schema": {"type": "object", "properties": {"pattern": {"type": "string"}}},
    }
    a = anthropic.Anthropic(base_url=upstream.base_url, api_key="k", max_retries=0)
    messages: list[MessageParam] = [user(prompt)]
    results = ["Stored as out_1 (json; 300,000 bytes)", 'line 77: "key": "PLANTED-c0ffee"']
    for expected_tool, text in zip(["Bash", "search_large_output"], results, strict=True):
        m = a.messages.create(model=MODEL, max_tokens=500, messages=messages, tools=[*TOOLS, search_tool])
        call = next(b for b in m.content if b.type == "tool_use")
        assert call.name == expected_tool
        if expected_tool == "Bash":
            assert call.input == {"command": "cat big.json"}
        messages += [
            assistant(*[b.model_dump(exclude_none=True, exclude={"caller", "citations"}) for b in m.content]),
            user(result(call.id, text)),
        ]
    final = a.messages.create(model=MODEL, max_tokens=500, messages=messages, tools=[*TOOLS, search_tool])
    assert block_at(final.content, 0, TextBlock).text == "ANSWER: PLANTED-c0ffee"
    # Codex-shaped shell tool (argv array) on Responses
    o = openai.OpenAI(base_url=upstream.openai_url, api_key="k", max_retries=0)
    argv_tool = cast(  # no `strict`, as Codex sends it
        FunctionToolParam,
        {
            "type": "function",
            "name": "shell",
            "parameters": {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}},
        },
    )
    r = o.responses.create(model="gpt-5", input=prompt, tools=[argv_tool])
    assert (
        r.output[-1].type == "function_call"
        and r.output[-1].arguments == '{"command": ["bash", "-lc", "cat big.json"]}'
    )


def test_request_log_endpoint_for_other_processes(upstream: UpstreamServer) -> None:
    """Benches run the upstream in its own process and read its figures over HTTP."""
    body = anthropic_body(messages=[user(filler(1500, "a"))], cache_control={"type": "ephemeral"})
    post(upstream, "/v1/messages", body)
    post(upstream, "/v1/messages", body)
    post(upstream, "/v1/messages", anthropic_body(max_tokens=None))
    log = httpx2.get(upstream.base_url + "/_upstream/requests").json()
    assert [entry["status"] for entry in log] == [200, 200, 400]
    assert log[1]["usage"]["cache_read"] == log[0]["usage"]["cache_write"] > 0
    assert log[2]["usage"] is None and "max_tokens" in log[2]["error"]
