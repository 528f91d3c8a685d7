"""Builders for the compaction suites: message lists in each API's format, and reading a stored output back whole."""

from __future__ import annotations

import json
from typing import Any

from llm_upstream.signing import Signer
from llm_upstream.validate_anthropic import validate_messages_request
from llm_upstream.validate_openai import validate_chat_request, validate_responses_request
from mcp_offload.compact import AsyncCompactor
from mcp_offload.core import outputs


def big_json(n: int, tag: str = "x") -> str:
    return json.dumps({"items": [{"id": i, "tag": tag, "text": f"row {i} of {tag}"} for i in range(n)]})


def anthropic_turn(
    call_id: str, result: str, *, question: str | None = None, tool: str = "fetch"
) -> list[dict[str, Any]]:
    turn: list[dict[str, Any]] = [{"role": "user", "content": question}] if question else []
    return [
        *turn,
        {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": {"q": call_id}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"done with {call_id}"}]},
    ]


def chat_turn(call_id: str, result: str, *, question: str | None = None, tool: str = "fetch") -> list[dict[str, Any]]:
    turn: list[dict[str, Any]] = [{"role": "user", "content": question}] if question else []
    return [
        *turn,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": {"name": tool, "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
        {"role": "assistant", "content": f"done with {call_id}"},
    ]


def responses_turn(
    call_id: str, result: str, *, question: str | None = None, tool: str = "fetch"
) -> list[dict[str, Any]]:
    turn: list[dict[str, Any]] = [{"role": "user", "content": question}] if question else []
    return [
        *turn,
        {"type": "function_call", "call_id": call_id, "name": tool, "arguments": "{}"},
        {"type": "function_call_output", "call_id": call_id, "output": result},
        {"role": "assistant", "content": f"done with {call_id}"},
    ]


async def read_whole(compactor: AsyncCompactor, handle: str) -> str:
    """The stored text, through the same `read` the tools use, page by page."""
    text, start = "", 1
    while True:
        out = await outputs.read(compactor.services, compactor.scope, handle, start=start)
        text += out.text
        if out.next_start is None:
            return text
        start = out.next_start


def set_call_arguments(fmt: str, call: dict[str, Any], arguments: str) -> None:
    """Give the (first) tool call of `call`, an assistant message / Responses item of a `*_turn`, these JSON
    arguments, in that format's own place for them."""
    if fmt == "anthropic":
        call["content"][0]["input"] = json.loads(arguments)
    elif fmt == "openai":
        call["tool_calls"][0]["function"]["arguments"] = arguments
    else:
        call["arguments"] = arguments


def handle_in(text: str) -> str:
    assert text.startswith("Stored as out_"), text[:80]
    return text.split()[2]


def validate(fmt: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> None:
    """The scripted upstream's request validation, the same code that answers 400 to a real SDK."""
    if fmt == "anthropic":
        body = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": messages, "tools": tools}
        validate_messages_request(body, Signer())
    elif fmt == "openai":
        validate_chat_request({"model": "gpt-4.1", "messages": messages, "tools": tools})
    else:
        validate_responses_request({"model": "gpt-4.1", "input": messages, "tools": tools}, Signer(), lambda _: None)
